// The Redis limiter under load and outages, against a real Redis: a stalled event loop is not a
// Redis timeout; a switch to the fallback starts from what Redis last said (never a full
// bucket, bans kept); concurrent requests share pipelines and one id's flood is one script run;
// the clock offset moves the script's time.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Redis } from 'ioredis';
import { ManualClock } from '../../../src/core/clock.js';
import type { Limits, Logger, LogLevel } from '../../../src/core/index.js';
import { RedisLimiter, openRedisLimiter, openRedisLink, type LimitResult } from '../../../src/limits/index.js';
import { MAX_WAITING_TAKES } from '../../../src/limits/redis/link.js';
import { skipUnless } from '../../support/engines.js';
import { sleep } from '../../support/free-port.js';
import { startRedis, type RedisServer } from '../../support/redis.js';
import { shareRedis } from '../../support/shared-redis.js';
import { until } from '../../support/wait.js';

const FREE: Limits = { perMinute: 60, perDay: 1000 };
const BAN = { after: 2, seconds: 300 };
const skip = skipUnless('Redis limiter overload tests', ['redis']);

interface Line { level: LogLevel; msg: string }
function recorder(): Logger & { lines: Line[] } {
  const lines: Line[] = [];
  return { lines, log: (level, msg) => lines.push({ level, msg }) };
}

/** Keeps this process's event loop busy for `ms` (a large seed, a flood of parsing). */
function burn(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    // busy
  }
}

/** Spends `id`'s 60 tokens and gets it banned (in Redis), one request at a time. */
async function spendAndBan(limiter: RedisLimiter, id: string): Promise<void> {
  for (let i = 0; i < 60; i++) assert.equal((await limiter.take(id, FREE)).outcome, 'ok');
  let last: LimitResult | undefined;
  for (let i = 0; i < 4; i++) last = await limiter.take(id, FREE);
  assert.equal(last?.outcome, 'temporarily_banned');
}

const count = (results: readonly LimitResult[], outcome: string): number => results.filter((r) => r.outcome === outcome).length;

describe('Redis limiter under load', { skip }, () => {
  let redis: RedisServer;
  let admin: Redis;
  shareRedis((shared) => ({ redis, admin } = shared));

  it('a stalled event loop is not a Redis timeout: a banned key flooding gets 0 admitted, 0 fallbacks', async (t) => {
    const log = recorder();
    const limiter = await openRedisLimiter(redis.url, { prefix: 'stall:', clock: new ManualClock(), ban: BAN, logger: log });
    t.after(() => limiter.close());
    await spendAndBan(limiter, 'k');
    const results: LimitResult[] = [];
    for (let round = 0; round < 6; round++) {
      // Requests sent, then our own loop stalls past the 250 ms timeout while Redis answers.
      const flood = Array.from({ length: 300 }, () => limiter.take('k', FREE));
      await new Promise((r) => setImmediate(r)); // the pipeline goes out
      burn(400);
      results.push(...await Promise.all(flood));
    }
    assert.equal(results.length, 1800);
    assert.equal(count(results, 'ok'), 0, 'admitted while banned');
    assert.equal(count(results, 'temporarily_banned'), 1800);
    assert.equal(limiter.shared, true, 'never switched to the fallback');
    assert.deepEqual(log.lines.filter((l) => l.level === 'error'), []);
  });

  it('Redis killed: the fallback starts from what Redis said (spent, banned, a few left), unknown ids start empty (strict); back: Redis again', async (t) => {
    const own = await startRedis({ t });
    const log = recorder();
    const clock = new ManualClock();
    const limiter = await openRedisLimiter(own.url, { prefix: 'kill:', clock, ban: BAN, logger: log, probeEveryMs: 50, outage: 'strict' });
    t.after(() => limiter.close());
    await spendAndBan(limiter, 'banned');
    for (let i = 0; i < 55; i++) await limiter.take('five-left', FREE);
    for (let i = 0; i < 60; i++) await limiter.take('spent', FREE);
    assert.equal((await limiter.take('spent', FREE)).outcome, 'rate_limited');
    await own.kill();
    const banned: LimitResult[] = [];
    const fiveLeft: LimitResult[] = [];
    const spent: LimitResult[] = [];
    const unknown: LimitResult[] = [];
    for (let i = 0; i < 100; i++) {
      banned.push(await limiter.take('banned', FREE));
      fiveLeft.push(await limiter.take('five-left', FREE));
      spent.push(await limiter.take('spent', FREE));
      unknown.push(await limiter.take('never-seen', FREE));
    }
    assert.equal(limiter.shared, false);
    assert.equal(count(banned, 'ok'), 0, 'the ban holds');
    assert.equal(count(banned, 'temporarily_banned'), 100);
    assert.ok(Number(banned[0]?.retryAfter) > 290, `the ban's time left: ${banned[0]?.retryAfter}`);
    assert.equal(count(fiveLeft, 'ok'), 5, 'what Redis left it, no more');
    assert.equal(count(spent, 'ok'), 0);
    assert.equal(count(unknown, 'ok'), 0, 'an id never heard of starts empty');
    // The fallback refills at the plan's rate from there: one token a second for a free key.
    clock.advance(10_000);
    let admitted = 0;
    for (let i = 0; i < 50; i++) if ((await limiter.take('spent', FREE)).outcome === 'ok') admitted++;
    assert.equal(admitted, 0, 'spent got banned meanwhile by its own refusals (strikes carried over)');
    for (let i = 0; i < 50; i++) if ((await limiter.take('five-left', FREE)).outcome === 'ok') admitted++;
    assert.ok(admitted <= 10, `ten seconds refill ten tokens at most: ${admitted}`);

    await own.start();
    await until('the limiter uses Redis again', () => limiter.shared);
    // Redis came back empty (no persistence): its word counts again.
    assert.equal((await limiter.take('never-seen', FREE)).remaining, '59');
    assert.equal(await own.command('EXISTS', 'kill:never-seen'), ':1');
    assert.equal(log.lines.filter((l) => l.level === 'error').length, 1);
  });

  it('Redis hung (SIGSTOP) mid-flood: the requests waiting on it and all after get the fallback, which keeps the ban', async (t) => {
    const log = recorder();
    const limiter = await openRedisLimiter(redis.url, { prefix: 'hang:', clock: new ManualClock(), ban: BAN, logger: log, probeEveryMs: 50 });
    t.after(() => limiter.close());
    await spendAndBan(limiter, 'k');
    redis.pause();
    t.after(() => redis.resume());
    const waiting = await Promise.all(Array.from({ length: 500 }, () => limiter.take('k', FREE)));
    assert.equal(limiter.shared, false);
    const after: LimitResult[] = [];
    for (let i = 0; i < 500; i++) after.push(limiter.take('k', FREE) as LimitResult);
    assert.equal(count([...waiting, ...after], 'ok'), 0);
    redis.resume();
    await until('the limiter uses Redis again', () => limiter.shared);
    assert.equal((await limiter.take('k', FREE)).outcome, 'temporarily_banned', 'Redis still holds the ban');
  });

  it('concurrent requests share pipelines; the requests of one id share one script run', async (t) => {
    const limiter = await openRedisLimiter(redis.url, { prefix: 'rt:', clock: new ManualClock(), ban: { after: Infinity, seconds: 0 }, logger: recorder() });
    t.after(() => limiter.close());
    await limiter.take('warm', FREE);
    await admin.config('RESETSTAT');
    // 50 ids, 4 requests each, all in one turn of the event loop.
    const ids = Array.from({ length: 50 }, (_, i) => `id${i}`);
    const results = await Promise.all(ids.flatMap((id) => [0, 1, 2, 3].map(() => limiter.take(id, FREE))));
    for (const [i] of ids.entries()) {
      assert.deepEqual(results.slice(4 * i, 4 * i + 4).map((r) => r.remaining), ['59', '58', '57', '56'], 'in order, each charged once');
    }
    // A flood of one id: 2,000 requests, exactly its 60 admitted.
    const flood = await Promise.all(Array.from({ length: 2000 }, () => limiter.take('hot', FREE)));
    assert.equal(count(flood, 'ok'), 60);
    const stats = await admin.info('commandstats');
    const evalsha = Number(/cmdstat_evalsha:calls=(\d+)/.exec(stats)?.[1]);
    assert.ok(evalsha <= 50 + Math.ceil(2000 / 256), `script runs for 2,200 requests: ${evalsha}`);
    assert.ok(evalsha >= 50);
  });

  it('clockOffsetMs moves the script\'s time: a bucket refills when it jumps 60 s, a ban ends when it jumps past it', async (t) => {
    let offset = 0;
    const limiter = await openRedisLimiter(redis.url, {
      prefix: 'offset:', clock: new ManualClock(), ban: { after: 0, seconds: 120 }, logger: recorder(), clockOffsetMs: () => offset,
    });
    t.after(() => limiter.close());
    const limits = { perMinute: 3, perDay: 1000 };
    for (let i = 0; i < 3; i++) assert.equal((await limiter.take('refill', limits)).outcome, 'ok');
    assert.equal((await limiter.take('refill', limits)).outcome, 'rate_limited');
    const before = Number((await limiter.take('other', limits)).reset);
    offset = 60_000;
    const back = await limiter.take('refill', limits);
    assert.equal(back.outcome, 'ok');
    assert.equal(back.remaining, '2', 'refilled by the jump');
    assert.ok(Number((await limiter.take('other2', limits)).reset) - before >= 59, 'Reset is on the moved clock');

    for (let i = 0; i < 3; i++) await limiter.take('ban', limits);
    await limiter.take('ban', limits);
    const banned = await limiter.take('ban', limits);
    assert.equal(banned.outcome, 'temporarily_banned');
    offset += 100_000;
    assert.equal((await limiter.take('ban', limits)).outcome, 'temporarily_banned', '100 s of a 120 s ban');
    offset += 21_000;
    assert.equal((await limiter.take('ban', limits)).outcome, 'ok', 'past the ban');
  });

  it('a refused flood costs Redis a few script runs, not one per request: 20,000 requests of a banned key', async (t) => {
    const limiter = await openRedisLimiter(redis.url, { prefix: 'cheap:', clock: new ManualClock(), ban: BAN, logger: recorder() });
    t.after(() => limiter.close());
    await spendAndBan(limiter, 'k');
    await admin.config('RESETSTAT');
    const all = await Promise.all(Array.from({ length: 20_000 }, () => limiter.take('k', FREE)));
    assert.equal(count(all, 'temporarily_banned'), 20_000);
    const evalsha = Number(/cmdstat_evalsha:calls=(\d+)/.exec(await admin.info('commandstats'))?.[1]);
    assert.ok(evalsha <= Math.ceil(20_000 / 256), `script runs: ${evalsha}`);
  });
});

describe('Redis limiter: what waits on Redis is bounded', { skip }, () => {
  it('past MAX_WAITING_TAKES takes waiting, more are answered at once by the fallback (one warn line), and Redis again once fewer wait', async (t) => {
    const redis = await startRedis({ t });
    const log = recorder();
    const link = await openRedisLink(redis.url, { logger: log, probeEveryMs: 50 });
    const limiter = new RedisLimiter(link, { prefix: 'bound:', clock: new ManualClock(), ban: { after: Infinity, seconds: 0 }, ownsLink: true });
    t.after(() => limiter.close());
    const big: Limits = { perMinute: 1e9, perDay: 1e12 };
    // More takes in one turn than may wait: one id (its runs coalesce), and others.
    const sent = MAX_WAITING_TAKES + 5_000;
    const results = Array.from({ length: sent }, (_, i) => limiter.take(i % 16 === 0 ? `id${i % 64}` : 'hot', big));
    const waiting = results.filter((r) => r instanceof Promise).length;
    assert.equal(waiting, MAX_WAITING_TAKES, 'no more wait on Redis than the bound');
    assert.equal(link.waiting.count, MAX_WAITING_TAKES);
    const answered = await Promise.all(results);
    assert.equal(answered.length, sent);
    assert.equal(count(answered, 'ok'), sent, 'every take answered');
    assert.equal(link.waiting.count, 0, 'none left counted once all are answered');
    const warned = log.lines.filter((l) => l.msg.startsWith('limits: too many requests wait on Redis'));
    assert.equal(warned.length, 1, 'said once');
    assert.equal(warned[0]?.level, 'warn');
    // (The bound is no outage: Redis is taken for down only when it is silent for the timeout,
    // which a loaded machine's Redis may be while it works through 65,536 requests.)
    await until('the limiter uses Redis', () => limiter.shared);
    const again = limiter.take('hot', big);
    assert.ok(again instanceof Promise, 'charged in Redis again');
    assert.equal((await again).outcome, 'ok');
  });
});

describe('Redis limiter: a charge queued when the link goes down', { skip }, () => {
  it('is answered by the fallback, and the id is charged in Redis again once it is back', async (t) => {
    const redis = await startRedis({ t });
    const link = await openRedisLink(redis.url, { logger: recorder(), probeEveryMs: 50 });
    const limiter = new RedisLimiter(link, { prefix: 'q:', clock: new ManualClock(), ban: BAN, ownsLink: true, outage: 'strict' });
    t.after(() => limiter.close());
    const queued = limiter.take('a', FREE);
    link.failed(new Error('gone for a moment'));
    assert.equal((await queued).outcome, 'rate_limited', 'the fallback, empty (strict) for an id it never heard of');
    await until('the probe brings the link back', () => limiter.shared);
    const again = await Promise.race([limiter.take('a', FREE), sleep(5000).then(() => undefined)]);
    assert.equal(again?.remaining, '59', 'answered by Redis, not left waiting on the failed charge');
  });
});
