// Creates with and without an Idempotency-Key on the PostgreSQL store, same run, 64
// connections: plain creates, keyed first uses (a new key each), keyed replays (1000 keys in turn).
// Run after `node build.mjs --tests` and `node build.mjs`: `cd test/bench && node pg-keyed.mjs`
// (BENCH_SECONDS=5, BENCH_ROUNDS=3: rounds interleave the three, the median is printed).
// petstore is pinned to CPU 0 and wrk to CPU 1; PostgreSQL shares both.
import { mkdtempSync, rmSync } from 'node:fs';
import { startPinned, wrk, writeBenchConfig } from './backends-lib.mjs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startPostgres } from '../../build/test/support/postgres.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const dir = mkdtempSync(join(tmpdir(), 'petstore-pgkeyed-'));
const config = writeBenchConfig(dir);

const SCENARIOS = [['plain', 'wrk/post.lua'], ['keyed', 'wrk/post-keyed.lua'], ['replay', 'wrk/post-replay.lua']];
const pg = await startPostgres();
const runs = Object.fromEntries(SCENARIOS.map(([name]) => [name, []]));
try {
  const srv = await startPinned('0', config, ['--store', pg.url]);
  for (let i = 0; i < 1000; i++) {
    const res = await fetch(`${srv.url}/pets`, { method: 'POST', headers: { authorization: 'Bearer bench-key', 'content-type': 'application/json', 'idempotency-key': `replay-${i}` }, body: '{"name":"bench-pet","categoryId":3,"status":"available"}' });
    if (res.status !== 201) throw new Error(`replay-${i}: ${res.status}`);
  }
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, script] of SCENARIOS) {
      const r = wrk(script, `${srv.url}/pets`, SECONDS);
      runs[name].push({ rps: Math.round(r.requests / (r.duration_us / 1e6)), p50: r.p50_us, non2xx: r.non2xx });
    }
  }
  srv.proc.kill('SIGTERM');
  await new Promise((r) => srv.proc.on('exit', r));
  console.log(`pets ${await pg.psql('SELECT count(*) FROM petstore_pets')}`.trim(), `keys ${await pg.psql('SELECT count(*) FROM petstore_idempotency_keys')}`.trim());
} finally {
  await pg.close();
  rmSync(dir, { recursive: true, force: true });
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const base = median(runs.plain.map((r) => r.rps));
for (const [name] of SCENARIOS) {
  const rps = median(runs[name].map((r) => r.rps));
  console.log(`${name}: ${rps}/s (${(rps / base).toFixed(2)}x plain), rounds ${runs[name].map((r) => r.rps).join(' ')}; p50 ${median(runs[name].map((r) => r.p50))} µs; non-2xx ${runs[name].map((r) => r.non2xx).join('/')}`);
}
