// Throughput of MemoryLimiter.take() and its headers as the app sets them: operations per second, median of 5 runs after a warm-up.
// Run: node build.mjs --tests && node test/bench/limiter-bench.mjs [--before DIR]
// `--before` takes another checkout's build/src (e.g. a worktree of an older commit): each
// case then runs both builds in interleaved rounds in this one process, and prints their ratio.
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { before: { type: 'string' } } });
const here = new URL('../../build/src/', import.meta.url).href;
async function load(root) {
  const { MemoryLimiter, pushLimitHeaders } = await import(`${root}limits/index.js`);
  const { systemClock } = await import(`${root}core/index.js`);
  return { MemoryLimiter, pushLimitHeaders, systemClock };
}
const builds = [['after', await load(here)]];
if (values.before !== undefined) builds.unshift(['before', await load(pathToFileURL(resolve(values.before)).href + '/')]);

const OPS = 1_000_000;
const RUNS = 5;
// Limits so large that every take() is admitted: the bench measures the common path.
const LIMITS = { perMinute: 1e9, perDay: 1e12 };

function run({ MemoryLimiter, pushLimitHeaders, systemClock }, ids, maxEntries) {
  const limiter = new MemoryLimiter({ clock: systemClock, ban: { after: 20, seconds: 300 }, maxEntries });
  for (const id of ids) limiter.take(id, LIMITS); // create the entries outside the timing
  const n = ids.length;
  let sink = 0;
  const t0 = performance.now();
  for (let i = 0; i < OPS; i++) {
    const headers = [];
    pushLimitHeaders(headers, limiter.take(ids[i % n], LIMITS));
    sink += headers.length / 2;
  }
  const ms = performance.now() - t0;
  if (sink !== OPS * 5) throw new Error(`unexpected header count ${sink}`);
  return OPS / (ms / 1000);
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

function bench(name, ids, maxEntries) {
  for (const [, b] of builds) run(b, ids, maxEntries); // warm-up: let the JIT settle
  const rates = builds.map(() => []);
  for (let r = 0; r < RUNS; r++) builds.forEach(([, b], i) => rates[i].push(run(b, ids, maxEntries)));
  const fmt = (x) => Math.round(x).toLocaleString('en-US');
  builds.forEach(([label, ], i) => {
    const tag = builds.length > 1 ? ` ${label}` : '';
    console.log(`${(name + tag).padEnd(48)} median ${fmt(median(rates[i]))} ops/s  (runs: ${rates[i].map(fmt).join(', ')})`);
  });
  if (builds.length > 1) console.log(`${''.padEnd(48)} after/before ${(median(rates[1]) / median(rates[0])).toFixed(3)}`);
}

const many = Array.from({ length: 10_000 }, (_, i) => `key-${i.toString(16).padStart(64, '0')}`);
console.log(`node ${process.version}, ${OPS.toLocaleString('en-US')} take() per run`);
bench('1 key', [many[0]]);
bench('10,000 keys round-robin', many);
bench('10,000 keys round-robin, maxEntries 10k', many, 10_000);
