// The scale-out figures, one run: list, get and create with 64 connections (wrk) on
//   file       one process, pets in a data file, limits in process        (petstore on CPU 0)
//   shared     one process, PostgreSQL store, Redis limits               (petstore on CPU 0)
//   shared x2  --workers 2 on the same backends                          (petstore on CPU 0)
//   and both shared modes again with petstore on CPUs 0-1 (MODES below).
// wrk is on CPU 1 in every mode; PostgreSQL and Redis are not pinned: on this 2-core VM they
// share both cores with everything else, petstore's included. The modes whose name says
// "backends on CPU 1" pin them (every PostgreSQL process and redis-server) to wrk's CPU
// instead, which leaves CPU 0 to petstore alone as in the file mode: on two cores the closest
// model of a deployment, where they run on machines of their own. With the shared backends it also counts, per request,
// the Redis commands sent and Redis's time per script run (INFO commandstats) and the PostgreSQL statements run
// (pg_stat_statements), and the CPU seconds of every process (petstore and its workers, every
// PostgreSQL backend, redis-server, from /proc) per request, from which it PROJECTS the
// throughput at 4, 8 and 16 cores (capacity() in backends-lib.mjs). With 2 workers it also shows
// how the 64 connections and the CPU spread over the workers.
// PostgreSQL runs at its defaults (fsync=on, synchronous_commit=on); BENCH_FSYNC=off runs
// without them, and every table then says so.
// Run after `node build.mjs --tests`: `cd test/bench && node workers-bench.mjs`
// (BENCH_SECONDS=1 for a smoke run).
import { mkdtempSync, rmSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { capacity, capacityTable, cpuMeter, enginesOf, pinEngines, startPinned, wrkDuring, writeBenchConfig } from './backends-lib.mjs';
import { median, roundRatios } from './lib.mjs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import postgres from 'postgres';
import { startPostgres } from '../../build/test/support/postgres.js';
import { startRedis } from '../../build/test/support/redis.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
// BENCH_WARMUP=s: unmeasured load before each measured run (default 3 s, at most BENCH_SECONDS).
// The shared mode's per-round-trip code (ioredis, the link) runs about thirty times less often
// than per-request code, so V8 optimises it last: after a 1 s warm-up (about 30,000 requests)
// callgrind still counted its optimising compiler in a fifth of the shared mode's extra
// instructions per request.
const WARMUP = Math.min(Number(process.env.BENCH_WARMUP ?? 3), SECONDS);
const dir = mkdtempSync(join(tmpdir(), 'petstore-workers-bench-'));
const config = writeBenchConfig(dir);

const FSYNC = process.env.BENCH_FSYNC === 'off' ? 'off' : 'on';
const durability = FSYNC === 'on' ? 'PostgreSQL at its defaults (fsync=on, synchronous_commit=on)' : 'PostgreSQL with fsync=off, synchronous_commit=off (NOT durable)';
const pg = await startPostgres({ settings: { shared_preload_libraries: 'pg_stat_statements', fsync: FSYNC, synchronous_commit: FSYNC } });
const redis = await startRedis();
await pg.psql('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
const admin = new Redis(redis.url);
// The bench's own connection to PostgreSQL, opened once, for the counts and the lock sampler:
// sampling through psql started a psql process, and PostgreSQL a backend for it, ten times a
// second during every shared create run (and only there), which took CPU from the run measured
// and broke the creates' batches up (about 30 creates per statement instead of 50-60 in one
// process, and 7 % fewer creates/s in a side-by-side check).
const db = postgres(pg.url, { max: 1, fetch_types: false, onnotice: () => undefined });
/** The one number a query answers. */
const one = async (query) => Number(Object.values((await query)[0])[0]);

async function counts() {
  const info = await admin.info('commandstats');
  // The scripts processes send (petstore's limiter, rate-limiter-flexible's counters); the
  // calls inside them are counted by Redis too, but are no round trip of their own. With each,
  // Redis's own time in them (µs, the calls inside included): per script run, what one run
  // costs Redis's single thread.
  let evalsha = 0;
  let evalshaUsec = 0;
  for (const cmd of ['evalsha', 'eval']) {
    const m = new RegExp(`cmdstat_${cmd}:calls=(\\d+),usec=(\\d+)`).exec(info);
    evalsha += Number(m?.[1] ?? 0);
    evalshaUsec += Number(m?.[2] ?? 0);
  }
  const statements = await one(db`SELECT coalesce(sum(calls), 0) FROM pg_stat_statements WHERE query ILIKE '%petstore_pets%' OR query ILIKE '%peer_pets%'`);
  // The group commit's statements (one per batch, one commit each) and the commits PostgreSQL made.
  const batches = await one(db`SELECT coalesce(sum(calls), 0) FROM pg_stat_statements WHERE query ILIKE '%json_to_recordset%' AND query ILIKE '%nextval%'`);
  const commits = await one(db`SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()`);
  return { evalsha, evalshaUsec, statements, batches, commits };
}

/** Statements waiting for an advisory lock (the id lock) right now. */
function lockWaiters() {
  return one(db`SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`);
}

// Pinning, the same for one worker and two: every petstore process on CPU 0, wrk on CPU 1,
// PostgreSQL and Redis unpinned (they share both cores with everything else). So "2 workers"
// runs both workers on the one core one worker had: what it measures is what a second
// process costs or gains besides CPU (batching, the cluster's hand-over). The "CPUs 0-1" pair
// gives both modes both cores (wrk's included), again the same for one worker and two.
const MODES = [
  ['file', '0', ['--data', join(dir, 'pets.json')]],
  ['shared', '0', ['--store', pg.url, '--limits', redis.url]],
  ['shared x2', '0', ['--store', pg.url, '--limits', redis.url, '--workers', '2']],
  ['shared (backends on CPU 1)', '0', ['--store', pg.url, '--limits', redis.url]],
  ['shared, CPUs 0-1', '0,1', ['--store', pg.url, '--limits', redis.url]],
  ['shared x2, CPUs 0-1', '0,1', ['--store', pg.url, '--limits', redis.url, '--workers', '2']],
  // The peer to beat on the same backends: Fastify + postgres.js + rate-limiter-flexible (its own table).
  ['fastify stack', '0', ['--store', pg.url, '--limits', redis.url, '--reset'], {}, new URL('./peers/fastify-stack.mjs', import.meta.url).pathname],
];
// BENCH_BEFORE=<older dist/petstore.js>: the file and shared modes once more on that bundle, in
// the same run, so that a change is measured before and after side by side.
const BEFORE = process.env.BENCH_BEFORE;
if (BEFORE) {
  MODES.push(['file@before', '0', ['--data', join(dir, 'pets-before.json')], {}, BEFORE]);
  MODES.push(['shared@before', '0', ['--store', pg.url, '--limits', redis.url], {}, BEFORE]);
  MODES.push(['shared@before (backends on CPU 1)', '0', ['--store', pg.url, '--limits', redis.url], {}, BEFORE]);
  // Selected by name only (BENCH_MODES): one and two workers on CPUs 0-1 with that bundle.
  if (process.env.BENCH_MODES) {
    MODES.push(['shared, CPUs 0-1@before', '0,1', ['--store', pg.url, '--limits', redis.url], {}, BEFORE]);
    MODES.push(['shared x2, CPUs 0-1@before', '0,1', ['--store', pg.url, '--limits', redis.url, '--workers', '2'], {}, BEFORE]);
  }
}
// Selected by name only (BENCH_MODES): the shared mode with named prepared statements
// (`prepare=true` in the store URL), beside the default, which prepares none so that it works
// behind a pooler in transaction mode: what preparing saves, measured in the same run.
if (process.env.BENCH_MODES) {
  const prepared = new URL(pg.url);
  prepared.searchParams.set('prepare', 'true');
  MODES.push(['shared, prepare=true', '0', ['--store', prepared.href, '--limits', redis.url]]);
}
/** The CPUs PostgreSQL and Redis run on in a mode: wrk's in the modes that say so, else both. */
const backendCpus = (mode) => (mode.endsWith('(backends on CPU 1)') ? '1' : '0,1');
const ALL_OPS = [['list', 'wrk/get.lua', '/pets?limit=20'], ['get', 'wrk/get.lua', '/pets/100'], ['create', 'wrk/post.lua', '/pets']];
// BENCH_OPS=create (comma-separated) runs only those operations; BENCH_MODES=shared,shared x2 only those modes.
const OPS = process.env.BENCH_OPS ? ALL_OPS.filter(([op]) => process.env.BENCH_OPS.split(',').includes(op)) : ALL_OPS;
if (process.env.BENCH_MODES) {
  // (';' separates names that hold a comma: BENCH_MODES='file;shared, CPUs 0-1'.)
  const keep = process.env.BENCH_MODES.split(process.env.BENCH_MODES.includes(';') ? ';' : ',');
  for (let i = MODES.length - 1; i >= 0; i--) if (!keep.includes(MODES[i][0])) MODES.splice(i, 1);
}
// BENCH_ROUNDS=n: every mode n times, interleaved (mode A, B, ..., A, B, ...); the best round of each is shown.
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 1);
const results = {};
/** Every round's requests/s, by mode and operation, in round order (for the paired ratios). */
const perRound = {};
const models = [];

/** Established connections to `port` per pid (ss), i.e. how the cluster spread wrk's 64. */
function connectionsPerProcess(port) {
  const out = spawnSync('ss', ['-Htnp', 'state', 'established', `( sport = :${port} )`], { encoding: 'utf8' }).stdout;
  const per = {};
  for (const line of out.split('\n')) {
    const pids = [...line.matchAll(/pid=(\d+)/g)].map((m) => m[1]).join('+');
    if (pids !== '') per[pids] = (per[pids] ?? 0) + 1;
  }
  return per;
}

/** The meter's totals without the per-process detail. */
function strip(cpu) {
  return Object.fromEntries(Object.entries(cpu).map(([name, c]) => [name, { seconds: Number(c.seconds.toFixed(3)), processes: c.processes }]));
}

/** CPU seconds of each process of the petstore tree (primary and workers) over a run. */
function perProcess(table) {
  return Object.fromEntries(Object.entries(table).map(([pid, s]) => [pid, Number(s.toFixed(2))]));
}
const has = (mode) => results[mode] !== undefined;
try {
  for (let round = 0; round < ROUNDS; round++) {
    for (const [mode, cpus, args, env, script] of MODES) {
      // Before the server starts: the backends its pool opens inherit the postmaster's CPUs.
      pinEngines(enginesOf(pg, redis), backendCpus(mode));
      const srv = await startPinned(cpus, config, args, env, script);
      if (round === 0 && !mode.startsWith('shared x2')) {
        for (let i = 0; i < 200; i++) {
          await fetch(`${srv.url}/pets`, { method: 'POST', headers: { authorization: 'Bearer bench-key', 'content-type': 'application/json' }, body: '{"name":"seed","categoryId":1,"status":"available"}' });
        }
      }
      results[mode] ??= {};
      for (const [op, wrkScript, path] of OPS) {
        // Warm-up, not measured: the JIT, the pools' connections, the read cache, and (with
        // workers) the primary handing the 64 connections over to the workers one by one.
        await wrkDuring(wrkScript, `${srv.url}${path}`, WARMUP, () => undefined);
        const shared = !mode.startsWith('file');
        const before = shared ? await counts() : undefined;
        const meter = cpuMeter(shared
          ? { petstore: { pid: srv.proc.pid }, ...enginesOf(pg, redis) }
          : { petstore: { pid: srv.proc.pid } });
        let spread;
        const waiters = [];
        let sampling = true;
        const sample = async () => {
          // Statements waiting for the id lock, sampled every 100 ms (creates only).
          while (sampling && op === 'create' && shared) {
            waiters.push(await lockWaiters());
            await new Promise((r) => setTimeout(r, 100));
          }
        };
        const sampler = sample();
        const r = await wrkDuring(wrkScript, `${srv.url}${path}`, SECONDS, () => { spread = connectionsPerProcess(new URL(srv.url).port); });
        sampling = false;
        await sampler;
        const cpu = meter.stop();
        const after = shared ? await counts() : undefined;
        const seconds = r.duration_us / 1e6;
        const rps = Math.round(r.requests / seconds);
        const prev = results[mode][op];
        // Busy and waiting, per second of run: petstore on its CPU, runnable but waiting for a
        // CPU (another process had it), and the others' CPU. Idle time is what is left.
        const perSecond = Object.entries(cpu).map(([k, v]) => `${k} ${(v.seconds / seconds).toFixed(2)} on CPU, ${(v.waited / seconds).toFixed(2)} waiting`).join('; ');
        console.log(`${op}, ${mode}, round ${round + 1}: ${rps}/s; s per s of run: ${perSecond}`);
        ((perRound[mode] ??= {})[op] ??= [])[round] = rps;
        if (mode.includes('x2')) {
          console.log(`${op}, ${mode}, round ${round + 1}: connections per process ${JSON.stringify(spread)} (a pid pair: both hold it), CPU s per process ${JSON.stringify(perProcess(cpu.petstore.perPid))}, ` +
            `PostgreSQL processes ${cpu.postgres.processes}; s runnable but waiting for a CPU: ${JSON.stringify(Object.fromEntries(Object.entries(cpu).map(([k, v]) => [k, Number(v.waited.toFixed(2))])))}`);
        }
        if (prev !== undefined && prev.rps >= rps) continue;
        if (prev !== undefined) models.splice(models.findIndex((m) => m.label === `${op}, ${mode}`), 1);
        models.push({ label: `${op}, ${mode}`, model: capacity(cpu, r.requests), cpu: strip(cpu), requests: r.requests });
        results[mode][op] = {
          rps, p50: r.p50_us, non2xx: r.non2xx ?? 0,
          ...(before === undefined ? {} : {
            redisPerRequest: (after.evalsha - before.evalsha) / r.requests,
            redisUsPerScript: after.evalsha > before.evalsha ? (after.evalshaUsec - before.evalshaUsec) / (after.evalsha - before.evalsha) : 0,
            pgPerRequest: (after.statements - before.statements) / r.requests,
            batchesPerSecond: Math.round((after.batches - before.batches) / seconds),
            createsPerBatch: after.batches > before.batches ? r.requests / (after.batches - before.batches) : 0,
            commitsPerSecond: Math.round((after.commits - before.commits) / seconds),
            lockWaiters: waiters.length === 0 ? 0 : waiters.reduce((a, b) => a + b, 0) / waiters.length,
          }),
        };
      }
      srv.proc.kill('SIGTERM');
      await new Promise((res) => srv.proc.on('exit', res));
    }
  }
} finally {
  admin.disconnect();
  await db.end({ timeout: 1 });
  await pg.close();
  await redis.close();
  rmSync(dir, { recursive: true, force: true });
}
console.log(`load average at the end: ${(await import('node:os')).loadavg().map((l) => l.toFixed(1)).join(' ')}`);
console.log(`${durability}, ${SECONDS} s per case. Per-request counts divide what the servers did by the answers wrk`);
console.log('counted: the up to 64 requests still in flight when wrk stops inflate them in short runs.');
const cell = (mode, op, f) => (has(mode) && results[mode][op] !== undefined ? f(results[mode][op]) : '-');
const rpsOf = (mode, op) => cell(mode, op, (x) => `${x.rps}/s`);
const ratio = (a, b, op) => (has(a) && has(b) && results[a][op] && results[b][op] ? `${(results[a][op].rps / results[b][op].rps).toFixed(2)}x` : '-');
console.log('| operation | file | shared (PostgreSQL + Redis) | shared/file | shared, backends on CPU 1 | /file | shared, 2 workers | 2 vs 1 | shared, CPUs 0-1 | 2 workers, CPUs 0-1 | 2 vs 1 | Fastify stack | shared vs stack |');
console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
for (const [op] of OPS) {
  console.log(`| ${op} | ${rpsOf('file', op)} | ${rpsOf('shared', op)} | ${ratio('shared', 'file', op)} | ${rpsOf('shared (backends on CPU 1)', op)} | ${ratio('shared (backends on CPU 1)', 'file', op)} | ${rpsOf('shared x2', op)} | ${ratio('shared x2', 'shared', op)} | ` +
    `${rpsOf('shared, CPUs 0-1', op)} | ${rpsOf('shared x2, CPUs 0-1', op)} | ${ratio('shared x2, CPUs 0-1', 'shared, CPUs 0-1', op)} | ${rpsOf('fastify stack', op)} | ${ratio('shared', 'fastify stack', op)} |`);
}
// The same ratios paired: each round's figure over the other mode's in that round (measured
// seconds apart), then the median over rounds, so that a slow spell of the machine weighs on
// both sides of a ratio instead of on one mode's best round.
const paired = (a, b, op) => {
  const ratios = roundRatios(perRound[a]?.[op] ?? [], perRound[b]?.[op] ?? []);
  return ratios.length === 0 ? '-' : `${median(ratios).toFixed(2)}x (${ratios.map((r) => r.toFixed(2)).join(' ')})`;
};
if (ROUNDS > 1) {
  console.log(`\nPaired ratios: the median over the ${ROUNDS} rounds of each round's ratio (each round's ratio in brackets):`);
  console.log('| operation | shared/file | backends on CPU 1 /file | 2 vs 1, CPU 0 | 2 vs 1, CPUs 0-1 | shared vs stack |');
  console.log('|---|---:|---:|---:|---:|---:|');
  for (const [op] of OPS) {
    console.log(`| ${op} | ${paired('shared', 'file', op)} | ${paired('shared (backends on CPU 1)', 'file', op)} | ${paired('shared x2', 'shared', op)} | ` +
      `${paired('shared x2, CPUs 0-1', 'shared, CPUs 0-1', op)} | ${paired('shared', 'fastify stack', op)} |`);
  }
}
if (has('shared, prepare=true')) {
  console.log('\nThe store URL with prepare=true (named prepared statements) against the default (none), same run:');
  console.log('| operation | shared | shared, prepare=true | default / prepare=true | paired | prepare=true / file, paired |');
  console.log('|---|---:|---:|---:|---:|---:|');
  for (const [op] of OPS) {
    console.log(`| ${op} | ${rpsOf('shared', op)} | ${rpsOf('shared, prepare=true', op)} | ${ratio('shared', 'shared, prepare=true', op)} | ${paired('shared', 'shared, prepare=true', op)} | ${paired('shared, prepare=true', 'file', op)} |`);
  }
}
console.log('\nPer request, and the group commit (creates per batch statement, batches and commits per second, statements waiting for the id lock on average):');
console.log('| mode | operation | Redis cmds/req | Redis µs/script | PG statements/req | creates/batch | batches/s | commits/s | lock waiters |');
console.log('|---|---|---:|---:|---:|---:|---:|---:|---:|');
for (const [mode] of MODES) {
  if (mode.startsWith('file') || !has(mode)) continue;
  for (const [op] of OPS) {
    const x = results[mode][op];
    if (x === undefined) continue;
    // The group commit's figures are petstore's: the peer has no batch statement and no id lock.
    const batched = op === 'create' && x.batchesPerSecond > 0;
    console.log(`| ${mode} | ${op} | ${x.redisPerRequest.toFixed(3)} | ${x.redisUsPerScript.toFixed(1)} | ${x.pgPerRequest.toFixed(3)} | ${batched ? x.createsPerBatch.toFixed(1) : '-'} | ${batched ? x.batchesPerSecond : '-'} | ${op === 'create' ? x.commitsPerSecond : '-'} | ${batched ? x.lockWaiters.toFixed(2) : '-'} |`);
  }
}
if (BEFORE) {
  console.log(`\nBefore (${BEFORE}) and after, same run (CPU ms per request: petstore's, from /proc):`);
  console.log('| operation | shared mode | file before | file after | after/before | shared before | shared after | after/before | shared/file before | shared/file after | CPU ms/req before | after |');
  console.log('|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  const cpuOf = (mode, op) => {
    const m = models.find((x) => x.label === `${op}, ${mode}`);
    return m === undefined ? '-' : (m.model.perRequest.petstore * 1000).toFixed(4);
  };
  for (const [op] of OPS) {
    if (!has('file@before') || !has('file') || !results['file@before'][op] || !results.file[op]) break;
    const fb = results['file@before'][op].rps;
    const fa = results.file[op].rps;
    for (const shared of ['shared', 'shared (backends on CPU 1)']) {
      if (!has(`${shared.replace('shared', 'shared@before')}`) || !has(shared)) continue;
      const sb = results[shared.replace('shared', 'shared@before')][op].rps;
      const sa = results[shared][op].rps;
      console.log(`| ${op} | ${shared} | ${fb}/s | ${fa}/s | ${(fa / fb).toFixed(2)}x | ${sb}/s | ${sa}/s | ${(sa / sb).toFixed(2)}x | ${(sb / fb).toFixed(2)}x | ${(sa / fa).toFixed(2)}x | ` +
        `${cpuOf(shared.replace('shared', 'shared@before'), op)} | ${cpuOf(shared, op)} |`);
    }
  }
}
console.log(`\nCapacity model (${durability}). CPU ms per request of each component, measured over the runs above,`);
console.log('and the throughput PROJECTED from them at more cores (not measured: CPU-bound, load generator elsewhere):\n');
console.log(capacityTable(models));
console.log(JSON.stringify({ durability, results, perRound, models: models.map(({ label, cpu, requests }) => ({ label, cpu, requests })) }));
