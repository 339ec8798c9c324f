// PostgreSQL store against the data file, same run: list, get and create with 64 connections.
// Run after `node build.mjs --tests` (it uses the built test support to start a throwaway
// PostgreSQL): `cd test/bench && node store-modes.mjs`. petstore is pinned to CPU 0 and wrk
// to CPU 1; PostgreSQL is not pinned (it shares both cores with them).
import { mkdtempSync, rmSync } from 'node:fs';
import { startPinned, wrk, writeBenchConfig } from './backends-lib.mjs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startPostgres } from '../../build/test/support/postgres.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const dir = mkdtempSync(join(tmpdir(), 'petstore-modes-'));
const config = writeBenchConfig(dir);

const pg = await startPostgres();
const results = {};
try {
  for (const [mode, args] of [['file', ['--data', join(dir, 'pets.json')]], ['postgres', ['--store', pg.url]]]) {
    const srv = await startPinned('0', config, args);
    for (let i = 0; i < 200; i++) {
      await fetch(`${srv.url}/pets`, { method: 'POST', headers: { authorization: 'Bearer bench-key', 'content-type': 'application/json' }, body: '{"name":"seed","categoryId":1,"status":"available"}' });
    }
    results[mode] = {
      list: wrk('wrk/get.lua', `${srv.url}/pets?limit=20`, SECONDS),
      get: wrk('wrk/get.lua', `${srv.url}/pets/100`, SECONDS),
      create: wrk('wrk/post.lua', `${srv.url}/pets`, SECONDS),
    };
    srv.proc.kill('SIGTERM');
    await new Promise((r) => srv.proc.on('exit', r));
  }
} finally {
  await pg.close();
  rmSync(dir, { recursive: true, force: true });
}
for (const op of ['list', 'get', 'create']) {
  const f = results.file[op];
  const p = results.postgres[op];
  const rps = (r) => Math.round(r.requests / (r.duration_us / 1e6));
  console.log(`${op}: file ${rps(f)}/s, postgres ${rps(p)}/s (${(rps(p) / rps(f)).toFixed(2)}x); p50 ${f.p50_us} vs ${p.p50_us} µs; non-2xx ${f.non2xx ?? 0} / ${p.non2xx ?? 0}`);
}
