// The scale-out figures, one run: list, get and create with 64 connections (wrk) on
//   file       one process, pets in a data file, limits in process        (petstore on CPU 0)
//   shared     one process, PostgreSQL store, Redis limits               (petstore on CPU 0)
//   shared x2  --workers 2 on the same backends                          (petstore on CPUs 0-1)
// wrk is on CPU 1 in every mode; PostgreSQL and Redis are not pinned: on this 2-core VM they
// share both cores with everything else. With the shared backends it also counts, per request,
// the Redis commands sent (INFO commandstats) and the PostgreSQL statements run
// (pg_stat_statements). Run after `node build.mjs --tests`: `cd test/bench && node workers-bench.mjs`.
import { mkdtempSync, rmSync } from 'node:fs';
import { startPinned, wrk, writeBenchConfig } from './backends-lib.mjs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { startPostgres } from '../../build/test/support/postgres.js';
import { startRedis } from '../../build/test/support/redis.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const dir = mkdtempSync(join(tmpdir(), 'petstore-workers-bench-'));
const config = writeBenchConfig(dir);

const pg = await startPostgres({ settings: { shared_preload_libraries: 'pg_stat_statements' } });
const redis = await startRedis();
await pg.psql('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
const admin = new Redis(redis.url);

async function counts() {
  const info = await admin.info('commandstats');
  const evalsha = Number(/cmdstat_evalsha:calls=(\d+)/.exec(info)?.[1] ?? 0);
  const out = await pg.psql("SELECT coalesce(sum(calls), 0) FROM pg_stat_statements WHERE query ILIKE '%petstore_pets%'");
  return { evalsha, statements: Number(out.trim().split('\n').at(-1)) };
}

const MODES = [
  ['file', '0', ['--data', join(dir, 'pets.json')]],
  ['shared', '0', ['--store', pg.url, '--limits', redis.url]],
  ['shared x2', '0,1', ['--store', pg.url, '--limits', redis.url, '--workers', '2']],
];
const OPS = [['list', 'wrk/get.lua', '/pets?limit=20'], ['get', 'wrk/get.lua', '/pets/100'], ['create', 'wrk/post.lua', '/pets']];
const results = {};
try {
  for (const [mode, cpus, args] of MODES) {
    const srv = await startPinned(cpus, config, args);
    if (mode !== 'shared x2') {
      for (let i = 0; i < 200; i++) {
        await fetch(`${srv.url}/pets`, { method: 'POST', headers: { authorization: 'Bearer bench-key', 'content-type': 'application/json' }, body: '{"name":"seed","categoryId":1,"status":"available"}' });
      }
    }
    results[mode] = {};
    for (const [op, script, path] of OPS) {
      const before = mode === 'file' ? undefined : await counts();
      const r = wrk(script, `${srv.url}${path}`, SECONDS);
      const after = mode === 'file' ? undefined : await counts();
      results[mode][op] = {
        rps: Math.round(r.requests / (r.duration_us / 1e6)), p50: r.p50_us, non2xx: r.non2xx ?? 0,
        ...(before === undefined ? {} : {
          redisPerRequest: (after.evalsha - before.evalsha) / r.requests,
          pgPerRequest: (after.statements - before.statements) / r.requests,
        }),
      };
    }
    srv.proc.kill('SIGTERM');
    await new Promise((r) => srv.proc.on('exit', r));
  }
} finally {
  admin.disconnect();
  await pg.close();
  await redis.close();
  rmSync(dir, { recursive: true, force: true });
}
console.log(`load average at the end: ${(await import('node:os')).loadavg().map((l) => l.toFixed(1)).join(' ')}`);
console.log('| operation | file | shared (PostgreSQL + Redis) | ratio | shared, 2 workers | 2 vs 1 | Redis cmds/req | PG statements/req |');
console.log('|---|---:|---:|---:|---:|---:|---:|---:|');
for (const [op] of OPS) {
  const f = results.file[op];
  const s = results.shared[op];
  const w = results['shared x2'][op];
  console.log(`| ${op} | ${f.rps}/s | ${s.rps}/s | ${(s.rps / f.rps).toFixed(2)}x | ${w.rps}/s | ${(w.rps / s.rps).toFixed(2)}x | ${s.redisPerRequest.toFixed(2)} / ${w.redisPerRequest.toFixed(2)} | ${s.pgPerRequest.toFixed(2)} / ${w.pgPerRequest.toFixed(2)} |`);
}
console.log(JSON.stringify(results));
