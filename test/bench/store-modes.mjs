// PostgreSQL store against the data file, same run: list, get and create with 64 connections.
// Run after `node build.mjs --tests` (it uses the built test support to start a throwaway
// PostgreSQL): `cd test/bench && node store-modes.mjs`. petstore is pinned to CPU 0 and wrk
// to CPU 1; PostgreSQL is not pinned (it shares both cores with them).
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startPostgres } from '../../build/test/support/postgres.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const BUNDLE = new URL('../../dist/petstore.js', import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), 'petstore-modes-'));
const config = join(dir, 'bench.config.json');
writeFileSync(config, JSON.stringify({
  keys: [{ key: 'bench-key', plan: 'enterprise', name: 'bench', limits: { perMinute: 1e9, perDay: 1e12 } }],
  ban: { after: 1e9, seconds: 1 }, anonymous: { perMinute: 1e9, perDay: 1e12 },
}));

function start(args) {
  const proc = spawn('taskset', ['-c', '0', process.execPath, BUNDLE, '--config', config, '--port', '0', '--log-level', 'warn', ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve) => {
    let out = '';
    proc.stdout.on('data', (d) => {
      out += d;
      const m = /listening on (\S+)/.exec(out);
      if (m) resolve({ url: m[1], proc });
    });
  });
}

function wrk(script, url) {
  const res = spawnSync('taskset', ['-c', '1', 'wrk', '-t1', '-c64', `-d${SECONDS}s`, '-s', script, url], { cwd: new URL('.', import.meta.url).pathname, encoding: 'utf8' });
  const line = res.stdout.split('\n').find((l) => l.startsWith('BENCH_JSON '));
  if (!line) throw new Error(res.stdout + res.stderr);
  const r = JSON.parse(line.slice(11));
  return r;
}

const pg = await startPostgres();
const results = {};
try {
  for (const [mode, args] of [['file', ['--data', join(dir, 'pets.json')]], ['postgres', ['--store', pg.url]]]) {
    const srv = await start(args);
    for (let i = 0; i < 200; i++) {
      await fetch(`${srv.url}/pets`, { method: 'POST', headers: { authorization: 'Bearer bench-key', 'content-type': 'application/json' }, body: '{"name":"seed","categoryId":1,"status":"available"}' });
    }
    results[mode] = {
      list: wrk('wrk/get.lua', `${srv.url}/pets?limit=20`),
      get: wrk('wrk/get.lua', `${srv.url}/pets/100`),
      create: wrk('wrk/post.lua', `${srv.url}/pets`),
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
