// The Redis limiter on a real redis-server: Redis commands per request, takes per second, and
// what a refused flood costs this process (heap, event-loop time), for three loads:
//   keyed:   64 concurrent requests at a time over 64 ids (a busy service, every key distinct)
//   one-key: 64 concurrent requests at a time of one key (a hot key)
//   refused: 5,000 concurrent requests at a time of a banned key (a hostile flood)
// Run: node build.mjs --tests && node test/bench/redis-limiter-bench.mjs [seconds per case, default 1]
import { Redis } from 'ioredis';
import { ManualClock } from '../../build/src/core/clock.js';
import { silentLogger } from '../../build/src/core/index.js';
import { RedisLimiter, openRedisLink } from '../../build/src/limits/index.js';
import { startRedis } from '../../build/test/support/redis.js';

const SECONDS = Number(process.argv[2] ?? 1);
const FREE = { perMinute: 60, perDay: 1000 };
const BIG = { perMinute: 1e9, perDay: 1e12 };

const redis = await startRedis();
const admin = new Redis(redis.url);

async function evalCalls() {
  const stats = await admin.info('commandstats');
  return Number(/cmdstat_evalsha:calls=(\d+)/.exec(stats)?.[1] ?? 0) + Number(/cmdstat_eval:calls=(\d+)/.exec(stats)?.[1] ?? 0);
}

async function run(name, [limiter, link], width, idOf, limits) {
  await admin.config('RESETSTAT');
  const sent0 = link.sent.pipelines;
  global.gc?.();
  const heap0 = process.memoryUsage().heapUsed;
  let heapMax = heap0;
  let takes = 0;
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  while (performance.now() - t0 < SECONDS * 1000) {
    const round = [];
    for (let i = 0; i < width; i++) round.push(limiter.take(idOf(i), limits));
    await Promise.all(round);
    takes += width;
    heapMax = Math.max(heapMax, process.memoryUsage().heapUsed);
  }
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const calls = await evalCalls();
  return {
    case: name,
    'takes/s': Math.round(takes / (ms / 1000)),
    'scripts/take': +(calls / takes).toFixed(4),
    'round trips/take': +((link.sent.pipelines - sent0) / takes).toFixed(4),
    'CPU µs/take': +(((cpu.user + cpu.system) / takes)).toFixed(1),
    'heap peak MiB': +((heapMax - heap0) / 1048576).toFixed(1),
  };
}

const rows = [];
try {
  const open = async (prefix, ban) => {
    const link = await openRedisLink(redis.url, { logger: silentLogger });
    return [new RedisLimiter(link, { prefix, clock: new ManualClock(), ban, ownsLink: true }), link];
  };
  const keyed = await open('b1:', { after: 20, seconds: 300 });
  rows.push(await run('keyed', keyed, 64, (i) => `id${i}`, BIG));
  rows.push(await run('one-key', keyed, 64, () => 'hot', BIG));
  const banned = await open('b2:', { after: 2, seconds: 300 });
  for (let i = 0; i < 70; i++) await banned[0].take('k', FREE);
  rows.push(await run('refused', banned, 5000, () => 'k', FREE));
  await keyed[0].close();
  await banned[0].close();
} finally {
  admin.disconnect();
  await redis.close();
}
console.table(rows);
