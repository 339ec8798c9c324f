// Throughput of MemoryLimiter.take() and its headers as the app sets them: operations per second, median of 5 runs after a warm-up.
// Run: node build.mjs --tests && node test/bench/limiter-bench.mjs
import { MemoryLimiter, pushLimitHeaders } from '../../build/src/limits/index.js';
import { systemClock } from '../../build/src/core/index.js';

const OPS = 1_000_000;
const RUNS = 5;
// Limits so large that every take() is admitted: the bench measures the common path.
const LIMITS = { perMinute: 1e9, perDay: 1e12 };

function run(ids, maxEntries) {
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
  run(ids, maxEntries); // warm-up: let the JIT settle
  const rates = Array.from({ length: RUNS }, () => run(ids, maxEntries));
  const fmt = (x) => Math.round(x).toLocaleString('en-US');
  console.log(`${name.padEnd(40)} median ${fmt(median(rates))} ops/s  (runs: ${rates.map(fmt).join(', ')})`);
}

const many = Array.from({ length: 10_000 }, (_, i) => `key-${i.toString(16).padStart(64, '0')}`);
console.log(`node ${process.version}, ${OPS.toLocaleString('en-US')} take() per run`);
bench('1 key', [many[0]]);
bench('10,000 keys round-robin', many);
bench('10,000 keys round-robin, maxEntries 10k', many, 10_000);
