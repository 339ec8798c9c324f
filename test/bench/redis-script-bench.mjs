// Redis's own time per run of the limiter's take script (INFO commandstats: evalsha
// usec_per_call), the CPU Redis spends per script run whatever the client does, for runs of n
// requests of one key charged together (as RedisLimiter coalesces one key's requests of one
// turn of the event loop):
//   admitted n=1, 16, 64: a key within its plan (10^9 a minute, 10^12 a day), every request admitted
//   refused n=64:         a key out of tokens that is never banned (every request a 429)
//   banned n=64:          a key under a ban
// Each case runs on a key of its own, through EVALSHA pipelines of 16 calls, with the service's
// arguments (TIME, no test time).
//
// Run: node build.mjs --tests && node test/bench/redis-script-bench.mjs [seconds per round, default 2]
//   BENCH_BEFORE_REV=<git revision>  also measures that revision's take script (src/limits/redis/script.ts)
//   BENCH_ROUNDS (3)                 rounds
//   BENCH_NO_PIN=1                   no taskset (default: the redis-servers on CPU 0, this process on CPU 1)
import { execFileSync, spawnSync } from 'node:child_process';
import { Redis } from 'ioredis';
import { TAKE_SCRIPT } from '../../build/src/limits/redis/script.js';
import { startRedis } from '../../build/test/support/redis.js';
import { ROOT, have, median, roundRatios } from './lib.mjs';

const SECONDS = Number(process.argv[2] ?? 2);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const BEFORE_REV = process.env.BENCH_BEFORE_REV;
const PIPELINE = 16;

/** The take script of another revision: its script.ts, types stripped, imported from memory. */
async function scriptOf(rev) {
  const ts = execFileSync('git', ['show', `${rev}:src/limits/redis/script.ts`], { cwd: ROOT, encoding: 'utf8' });
  const { transformSync } = await import('esbuild');
  const { code } = transformSync(ts, { loader: 'ts', format: 'esm' });
  return (await import(`data:text/javascript,${encodeURIComponent(code)}`)).TAKE_SCRIPT;
}

const scripts = [['after', TAKE_SCRIPT]];
if (BEFORE_REV) scripts.unshift([`before (${BEFORE_REV})`, await scriptOf(BEFORE_REV)]);

const BIG = '1000000000 1000000000000';
const CASES = [
  { name: 'admitted, n=1', n: 1, limits: BIG, ban: '20 300000' },
  { name: 'admitted, n=16', n: 16, limits: BIG, ban: '20 300000' },
  { name: 'admitted, n=64', n: 64, limits: BIG, ban: '20 300000' },
  { name: 'refused, n=64', n: 64, limits: '1 1000', ban: '-1 0' },
  { name: 'banned, n=64', n: 64, limits: '1 1000', ban: '0 3600000' },
];

// One redis-server per script (commandstats cannot tell two scripts' EVALSHAs apart), both on
// the same CPU, driven in turn pipeline by pipeline: a slow spell of the shared machine falls on
// both sides of a ratio.
const servers = [];
for (let s = 0; s < scripts.length; s++) {
  const redis = await startRedis();
  servers.push({ redis, admin: new Redis(redis.url) });
}
try {
  if (!process.env.BENCH_NO_PIN && have('taskset')) {
    for (const { admin } of servers) {
      const pid = /process_id:(\d+)/.exec(await admin.info('server'))?.[1];
      spawnSync('taskset', ['-pc', '0', pid], { stdio: 'ignore' });
    }
    spawnSync('taskset', ['-pc', '1', String(process.pid)], { stdio: 'ignore' });
  }
  const shas = [];
  for (const [s, [, text]] of scripts.entries()) shas.push(await servers[s].admin.script('LOAD', text));

  /** evalsha's usec_per_call since the last RESETSTAT. */
  const usPerCall = async (admin) => {
    const line = /cmdstat_evalsha:calls=(\d+),usec=(\d+),usec_per_call=([\d.]+)/.exec(await admin.info('commandstats'));
    return Number(line?.[3] ?? NaN);
  };

  /** One pipeline of PIPELINE script runs of `kase` on every server in turn, for `seconds`. */
  const drive = async (c, seconds) => {
    const kase = CASES[c];
    const args = `${kase.limits} ${kase.ban} ${kase.n} 0`;
    const end = performance.now() + seconds * 1000;
    while (performance.now() < end) {
      for (const [s, { admin }] of servers.entries()) {
        const pipe = admin.pipeline();
        for (let i = 0; i < PIPELINE; i++) pipe.evalsha(shas[s], 1, `k:${c}`, args);
        for (const [err] of await pipe.exec()) if (err) throw err;
      }
    }
  };

  // Warm-up, and the refused and banned keys brought to their state.
  for (let c = 0; c < CASES.length; c++) await drive(c, 0.5);

  const us = scripts.map(() => CASES.map(() => []));
  for (let r = 0; r < ROUNDS; r++) {
    for (let c = 0; c < CASES.length; c++) {
      for (const { admin } of servers) await admin.config('RESETSTAT');
      await drive(c, SECONDS);
      for (const [s, { admin }] of servers.entries()) us[s][c].push(await usPerCall(admin));
    }
  }

  const rows = [];
  for (const [c, kase] of CASES.entries()) {
    const row = { case: kase.name };
    for (const [s, [name]] of scripts.entries()) {
      const m = median(us[s][c]);
      row[`${name} µs/run`] = +m.toFixed(2);
      row[`${name} µs/request`] = +(m / kase.n).toFixed(3);
    }
    if (scripts.length === 2) row['after/before (paired)'] = +median(roundRatios(us[1][c], us[0][c])).toFixed(3);
    rows.push(row);
  }
  console.log(`Redis usec_per_call of EVALSHA, median of ${ROUNDS} rounds of ${SECONDS} s (the scripts in turn, pipeline by pipeline); per round:`);
  for (const [s, [name]] of scripts.entries()) console.log(`  ${name}: ${CASES.map((k, c) => `${k.name} [${us[s][c].join(', ')}]`).join('; ')}`);
  console.table(rows);
} finally {
  for (const { redis, admin } of servers) {
    admin.disconnect();
    await redis.close();
  }
}
