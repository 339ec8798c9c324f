// The Redis limiter against a real Redis: what its state costs Redis (expiring keys), reset by
// prefix, the outage path (fallback at once, one error line, back by itself), a hung Redis, a
// Redis that forbids scripts, and clocks that disagree. The shared arithmetic is in
// limiter-cases.test.ts.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Redis } from 'ioredis';
import { ManualClock } from '../../../src/core/clock.js';
import type { Limits, Logger, LogLevel } from '../../../src/core/index.js';
import { RedisStartError, openRedisLimiter, openRedisLink, RedisLimiter, type LimitResult } from '../../../src/limits/index.js';
import { TAKE_SCRIPT } from '../../../src/limits/redis/script.js';
import { skipUnless } from '../../support/engines.js';
import { sleep } from '../../support/free-port.js';
import { startRedis, type RedisServer } from '../../support/redis.js';
import { shareRedis } from '../../support/shared-redis.js';
import { until } from '../../support/wait.js';

const FREE: Limits = { perMinute: 60, perDay: 1000 };
const BAN = { after: 20, seconds: 300 };
const skip = skipUnless('Redis limiter tests', ['redis']);

interface Line { level: LogLevel; msg: string; fields: Record<string, unknown> | undefined }
function recorder(): Logger & { lines: Line[] } {
  const lines: Line[] = [];
  return { lines, log: (level, msg, fields) => lines.push({ level, msg, fields }) };
}

describe('Redis limiter', { skip }, () => {
  let redis: RedisServer;
  let admin: Redis;
  shareRedis((shared) => ({ redis, admin } = shared));

  it('keeps one hash per id that expires when its buckets are full again', async (t) => {
    const limiter = await openRedisLimiter(redis.url, { prefix: 'exp:', clock: new ManualClock(), ban: BAN, logger: recorder() });
    t.after(() => limiter.close());
    await limiter.take('k1', FREE);
    const ttl = await admin.pttl('exp:k1');
    // The day bucket lacks one token: 86.4 s to full. The minute bucket's 1 s is shorter.
    assert.ok(ttl > 80_000 && ttl <= 86_400, `PTTL ${ttl}`);
    assert.deepEqual((await admin.hkeys('exp:k1')).sort(), ['at', 'b', 'd', 'k', 'm']);
    // A plan whose tokens refill in a millisecond: the key is gone almost at once.
    await limiter.take('k2', { perMinute: 60_000, perDay: 86_400_000 });
    await until('the full key expires', async () => (await admin.exists('exp:k2')) === 0);
    assert.equal(await admin.exists('exp:k1'), 1);
  });

  it('a refusal by the day bucket leaves the minute bucket as it was', async (t) => {
    let now = Date.UTC(2026, 0, 1);
    const limiter = await openRedisLimiter(redis.url, { prefix: 'day:', clock: new ManualClock(), ban: BAN, logger: recorder(), testTime: () => now });
    t.after(() => limiter.close());
    const limits = { perMinute: 10, perDay: 2 };
    for (let i = 0; i < 2; i++) assert.equal((await limiter.take('k', limits)).outcome, 'ok');
    const before = await admin.hget('day:k', 'm');
    now += 1; // a millisecond: the minute bucket refills a little, the day one stays below a token
    for (let i = 0; i < 5; i++) assert.equal((await limiter.take('k', limits)).outcome, 'rate_limited');
    assert.equal(Number(await admin.hget('day:k', 'm')), Number(before) + 10, 'refilled by 1 ms, nothing taken');
  });

  it('a flood of one id charged in one run comes back in a few runs, not one answer per request', async () => {
    // 50 requests: 30 admitted (one token less each), then 20 refused with the same wait.
    const args = [30, 1000, -1, 0, 50, 0, Date.UTC(2026, 0, 1)].join(' ');
    const raw = await admin.eval(TAKE_SCRIPT, 1, 'flood:k', args);
    // One string: now, strikes, ban; then [count, outcome, minute, day, wait, step] per run.
    assert.equal(typeof raw, 'string');
    const reply = (raw as string).split(' ').map(Number);
    assert.deepEqual(reply.slice(3).filter((_, i) => i % 6 === 0 || i % 6 === 1 || i % 6 === 5), [30, 0, 1, 20, 1, 0]);
    assert.equal(reply.length, 3 + 2 * 6);
  });

  it('a lone script run (sent without a pipeline) after SCRIPT FLUSH: resent with EVAL, answered by Redis', async (t) => {
    const log = recorder();
    const limiter = await openRedisLimiter(redis.url, { prefix: 'flush:', clock: new ManualClock(), ban: BAN, logger: log });
    t.after(() => limiter.close());
    assert.equal((await limiter.take('k', FREE)).remaining, '59');
    await admin.script('FLUSH');
    assert.equal((await limiter.take('k', FREE)).remaining, '58', 'charged in Redis, after the first');
    assert.equal(limiter.shared, true);
    assert.deepEqual(log.lines.filter((l) => l.level === 'error'), []);
    assert.equal(Number(await admin.hget('flush:k', 'd')) < 1000 * 86_400_000 - 86_400_000, true, 'two tokens taken in Redis');
  });

  it('reset() deletes its own keys by prefix (SCAN), glob characters included, and no other', async (t) => {
    const log = recorder();
    const a = await openRedisLimiter(redis.url, { prefix: 'x[1]:', clock: new ManualClock(), ban: BAN, logger: log });
    const b = await openRedisLimiter(redis.url, { prefix: 'x1:', clock: new ManualClock(), ban: BAN, logger: log });
    t.after(() => Promise.all([a.close(), b.close()]));
    for (let i = 0; i < 2500; i++) await a.take(`id${i}`, FREE);
    await b.take('id0', FREE);
    assert.equal((await admin.keys('x\\[1\\]:*')).length, 2500);
    await a.reset();
    assert.equal((await admin.keys('x\\[1\\]:*')).length, 0);
    assert.deepEqual(await admin.keys('x1:*'), ['x1:id0']);
    assert.equal((await a.take('id0', FREE)).remaining, '59', 'a fresh id after reset');
  });

  it('processes with skewed clocks agree: the script uses the server\'s TIME', async (t) => {
    const log = recorder();
    // Wall clocks 20 years apart; neither is used for Redis state.
    const early = await openRedisLimiter(redis.url, { prefix: 'skew:', clock: new ManualClock(Date.UTC(2006, 0, 1)), ban: BAN, logger: log });
    const late = await openRedisLimiter(redis.url, { prefix: 'skew:', clock: new ManualClock(Date.UTC(2046, 0, 1)), ban: BAN, logger: log });
    t.after(() => Promise.all([early.close(), late.close()]));
    const limits = { perMinute: 5, perDay: 1000 };
    const seen: LimitResult[] = [];
    for (let i = 0; i < 6; i++) seen.push(await (i % 2 === 0 ? early : late).take('k', limits));
    assert.deepEqual(seen.map((r) => r.remaining), ['4', '3', '2', '1', '0', '0']);
    assert.deepEqual(seen.map((r) => r.outcome), ['ok', 'ok', 'ok', 'ok', 'ok', 'rate_limited']);
    const nowS = Date.now() / 1000;
    for (const r of seen) assert.ok(Math.abs(Number(r.reset) - nowS) < 120, `Reset ${r.reset} is from the server's clock`);
  });

  it('Redis stopped: the fallback answers at once, one error line; back: shared again, one info line', async (t) => {
    const log = recorder();
    const limiter = await openRedisLimiter(redis.url, { prefix: 'out:', clock: new ManualClock(), ban: BAN, logger: log, probeEveryMs: 100 });
    t.after(() => limiter.close());
    assert.equal((await limiter.take('k', FREE)).remaining, '59');
    await redis.stop();
    // The first request finds out (and is answered by the fallback); the rest do not ask Redis.
    const first = await limiter.take('k', FREE);
    assert.equal(first.outcome, 'ok');
    for (let i = 0; i < 50; i++) {
      const r = limiter.take('k', FREE);
      assert.ok(!(r instanceof Promise), 'answered synchronously by the fallback');
      assert.equal(r.outcome, 'ok');
    }
    assert.equal(limiter.shared, false);
    const errors = log.lines.filter((l) => l.level === 'error');
    assert.equal(errors.length, 1, JSON.stringify(log.lines));
    assert.match(errors[0]?.msg ?? '', /Redis does not answer/);
    assert.equal(errors[0]?.fields?.redis, `redis://127.0.0.1:${redis.port}/0`);

    await redis.start();
    await until('the limiter uses Redis again', () => limiter.shared);
    assert.equal(log.lines.filter((l) => l.level === 'info' && /answers again/.test(l.msg)).length, 1);
    // Redis restarted empty: a fresh id there, and the fallback's charges are forgotten.
    const back = await limiter.take('k', FREE);
    assert.equal(back.remaining, '59');
    assert.equal(await admin.exists('out:k'), 1, 'charged in Redis again');
    assert.equal(log.lines.filter((l) => l.level === 'error').length, 1, 'still one error line');
  });

  it('Redis hung (SIGSTOP): one command timeout, then the fallback at once; resumed: shared again', async (t) => {
    const log = recorder();
    const limiter = await openRedisLimiter(redis.url, { prefix: 'hung:', clock: new ManualClock(), ban: BAN, logger: log, probeEveryMs: 100 });
    t.after(() => limiter.close());
    await limiter.take('k', FREE);
    redis.pause();
    t.after(() => redis.resume());
    const first = await limiter.take('k', FREE); // the command timeout (250 ms), not forever
    assert.equal(first.outcome, 'ok');
    assert.equal(limiter.shared, false);
    const next = limiter.take('k', FREE);
    assert.ok(!(next instanceof Promise), 'no request waits for a hung Redis once it is known to be away');
    assert.match(log.lines.find((l) => l.level === 'error')?.fields?.error as string, /did not answer within 250 ms/, JSON.stringify(log.lines));
    redis.resume();
    await until('the limiter uses Redis again', () => limiter.shared);
    assert.equal((await limiter.take('k', FREE)).remaining, '57', 'the state in Redis was kept: 3 charged there');
  });

  it('round trips in flight share one watchdog: no timer per round trip, and a hung Redis still fails each in time', async (t) => {
    const timers = (): number => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const log = recorder();
    const limiter = await openRedisLimiter(redis.url, { prefix: 'watch:', clock: new ManualClock(), ban: BAN, logger: log, probeEveryMs: 60_000, outage: 'strict' });
    t.after(() => limiter.close());
    await limiter.take('k0', FREE);
    const idle = timers();
    // Four round trips in flight (MAX_IN_FLIGHT), each sent in a turn of its own, then more
    // queued behind them, all waiting for a Redis that does not answer.
    redis.pause();
    t.after(() => redis.resume());
    const pending: Array<Promise<LimitResult>> = [];
    for (let i = 1; i <= 6; i++) {
      pending.push(limiter.take(`k${i}`, FREE) as Promise<LimitResult>);
      await new Promise((r) => setImmediate(r));
    }
    assert.equal(timers(), idle, 'no timer of their own holds the process for the round trips in flight');
    const started = performance.now();
    const answers = await Promise.all(pending);
    const waited = performance.now() - started;
    // Answered by the fallback after the command timeout (250 ms); ids Redis never told it of
    // start empty there (outage "strict"), so they are refused.
    assert.deepEqual(answers.map((a) => a.outcome), Array(6).fill('rate_limited'));
    assert.ok(waited >= 150 && waited < 2_000, `waited ${waited.toFixed(0)} ms`);
    assert.equal(limiter.shared, false);
    assert.equal(log.lines.filter((l) => l.level === 'error').length, 1, 'one error line');
  });

  it('close() while Redis hangs: the socket is released at once, nothing holds the process', async (t) => {
    const sockets = (): number => process.getActiveResourcesInfo().filter((r) => r === 'TCPSocketWrap').length;
    const limiter = await openRedisLimiter(redis.url, { prefix: 'close:', clock: new ManualClock(), ban: BAN, logger: recorder() });
    await limiter.take('k', FREE);
    redis.pause();
    t.after(() => redis.resume());
    await limiter.take('k', FREE);
    const open = sockets();
    await limiter.close();
    await sleep(20);
    assert.equal(sockets(), open - 1, 'a politely ended socket to a hung server would stay for 2 s');
  });

  it('a Redis that forbids EVAL/EVALSHA is a start error, not a failure per request', async (t) => {
    const locked = await startRedis({ t });
    await locked.command('ACL', 'SETUSER', 'default', '-eval', '-evalsha');
    await assert.rejects(
      openRedisLimiter(locked.url, { prefix: 'p:', clock: new ManualClock(), ban: BAN, logger: recorder() }),
      (err: Error) => err instanceof RedisStartError && /refuses the limiter's script \(NOPERM.*eval.*\).*EVAL and EVALSHA/.test(err.message),
    );
  });

  it('a Redis unreachable at start: the start goes on in fallback, one error line, and Redis is used once it answers', async (t) => {
    const later = await startRedis({ t });
    await later.stop();
    const log = recorder();
    const link = await openRedisLink(later.url, { logger: log, probeEveryMs: 100 });
    const limiter = new RedisLimiter(link, { prefix: 'late:', clock: new ManualClock(), ban: BAN, ownsLink: true });
    t.after(() => limiter.close());
    assert.equal(limiter.shared, false);
    const r = limiter.take('k', FREE);
    assert.ok(!(r instanceof Promise));
    assert.deepEqual(log.lines.map((l) => l.level), ['error']);
    await later.start();
    await until('the limiter uses Redis again', () => limiter.shared);
    await limiter.take('k', FREE);
    assert.equal(await later.command('EXISTS', 'late:k'), ':1');
  });

  it('close() quits the connection; twice is fine', async () => {
    const limiter = await openRedisLimiter(redis.url, { prefix: 'c:', clock: new ManualClock(), ban: BAN, logger: recorder() });
    const clients = async (): Promise<number> => (await admin.client('LIST') as string).trim().split('\n').length;
    const withIt = await clients();
    await limiter.close();
    await limiter.close();
    await until('the connection is gone', async () => (await clients()) === withIt - 1);
  });
});
