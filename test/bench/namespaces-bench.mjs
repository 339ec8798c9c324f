// A request in a namespace against the same request in the root, side by side in one run: one
// petstore (admin on, namespaces on, in memory) on CPU 0, wrk on CPU 1; the same 200 pets seeded
// in the root and in the namespace `bench`; rounds alternate root and namespace, and the
// ratio reported is the median of the per-round ratios (namespace / root).
//
//   node test/bench/namespaces-bench.mjs          (after node build.mjs)
//   BENCH_SECONDS (5), BENCH_ROUNDS (3), BENCH_CONNECTIONS (64) as for run.mjs.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BENCH_DIR, CONFIG, http, jsonHeaders, median, pinPrefix, pinSelf, roundRatios, startServer } from './lib.mjs';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 64);
const ADMIN_KEY = 'bench-admin-key-0123456789';
const SCENARIOS = [
  { id: 'list', path: '/pets?limit=20' },
  { id: 'get', path: '/pets/100' },
];

function wrk(url) {
  const argv = [...pinPrefix(1), 'wrk', '-t1', `-c${CONNECTIONS}`, `-d${SECONDS}s`, '--timeout', '10s', '-s', 'wrk/get.lua', url];
  return new Promise((resolve, reject) => {
    const proc = spawn(argv[0], argv.slice(1), { cwd: BENCH_DIR, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    proc.stdout.on('data', (c) => (out += c));
    proc.once('exit', (code) => {
      const line = out.split('\n').find((l) => l.startsWith('BENCH_JSON '));
      if (code !== 0 || !line) return reject(new Error(`wrk failed (code ${code}): ${out}`));
      const report = JSON.parse(line.slice('BENCH_JSON '.length));
      if (report.non2xx > 0) return reject(new Error(`${url}: ${report.non2xx} answers were not 2xx`));
      resolve({ rps: report.requests / (report.duration_us / 1e6), p99: report.p99_us / 1000 });
    });
  });
}

const dir = mkdtempSync(join(tmpdir(), 'petstore-ns-bench-'));
const config = join(dir, 'config.json');
writeFileSync(config, JSON.stringify({ ...JSON.parse(readFileSync(CONFIG, 'utf8')), admin: { key: ADMIN_KEY, namespaces: 10 } }));
pinSelf(1);
const server = await startServer('petstore', { config });
try {
  const root = server.url;
  const ns = root.replace(/\/v1$/, '/ns/bench/v1');
  for (const base of [root, ns]) {
    for (let i = 1; i <= 200; i++) {
      const r = await http(`${base}/pets`, { method: 'POST', headers: jsonHeaders(), body: JSON.stringify({ name: `pet-${i}`, categoryId: i % 7, status: 'available' }) });
      if (r.status !== 201) throw new Error(`seeding ${base}: ${r.status} ${r.text}`);
    }
  }
  const lines = [];
  for (const s of SCENARIOS) {
    await wrk(`${root}${s.path}`); // warm-up, both
    await wrk(`${ns}${s.path}`);
    const rootRuns = [];
    const nsRuns = [];
    for (let r = 0; r < ROUNDS; r++) {
      // Alternate which goes first, so that a drift of the machine weighs on both.
      if (r % 2 === 0) {
        rootRuns.push(await wrk(`${root}${s.path}`));
        nsRuns.push(await wrk(`${ns}${s.path}`));
      } else {
        nsRuns.push(await wrk(`${ns}${s.path}`));
        rootRuns.push(await wrk(`${root}${s.path}`));
      }
    }
    const ratios = roundRatios(nsRuns.map((x) => x.rps), rootRuns.map((x) => x.rps));
    lines.push(`${s.id}: root ${Math.round(median(rootRuns.map((x) => x.rps)))} req/s (p99 ${median(rootRuns.map((x) => x.p99)).toFixed(1)} ms), ` +
      `namespace ${Math.round(median(nsRuns.map((x) => x.rps)))} req/s (p99 ${median(nsRuns.map((x) => x.p99)).toFixed(1)} ms); ` +
      `namespace/root ${median(ratios).toFixed(3)} (rounds ${ratios.map((x) => x.toFixed(3)).join(', ')})`);
  }
  console.log(`server on CPU 0, wrk on CPU 1; ${ROUNDS} rounds x ${SECONDS} s, ${CONNECTIONS} connections`);
  for (const line of lines) console.log(line);
} finally {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
}
