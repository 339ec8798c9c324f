// The service clock stepping back, against a real Redis: the harness's clock offset moved 10
// years ahead, a key flooded into a ban on that clock, then the offset back to 0 (what a reset
// does). The key must be banned for what the ban had left, not for the 10 years, and its Redis
// entry must expire as a ban's would. The same with the clock moved an hour back by the script's
// own time (the Redis host's clock stepping back).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../../src/core/clock.js';
import { silentLogger, type Limits } from '../../../src/core/index.js';
import { openRedisLimiter, type LimitResult } from '../../../src/limits/index.js';
import { skipUnless } from '../../support/engines.js';
import { startRedis } from '../../support/redis.js';

const FREE: Limits = { perMinute: 60, perDay: 1000 };
const BAN = { after: 2, seconds: 300 };
const TEN_YEARS_MS = 315_360_000_000;
const skip = skipUnless('Redis clock step tests', ['redis']);

describe('Redis limiter: the clock steps back', { skip }, () => {
  it('a ban made 10 years ahead (clock offset) and the offset back to 0: banned for the ban\'s length at most, then admitted', async (t) => {
    const redis = await startRedis({ t });
    let offset = TEN_YEARS_MS;
    const limiter = await openRedisLimiter(redis.url, {
      prefix: 'step:', clock: new ManualClock(), ban: BAN, logger: silentLogger, clockOffsetMs: () => offset,
    });
    t.after(() => limiter.close());
    // A flood on the moved clock, in one turn (one script run) and one by one after it.
    const flood = await Promise.all(Array.from({ length: 70 }, () => limiter.take('k', FREE)));
    assert.equal(flood.filter((r) => r.outcome === 'ok').length, 60);
    assert.equal(flood.at(-1)?.outcome, 'temporarily_banned');
    offset = 0;
    const after: LimitResult = await limiter.take('k', FREE);
    assert.equal(after.outcome, 'temporarily_banned', 'the ban goes on, as one made now would');
    assert.ok(after.retryAfter <= 300, `Retry-After ${after.retryAfter}: at most the ban's 300 s, not the 10 years`);
    assert.ok(after.retryAfter > 250, `Retry-After ${after.retryAfter}`);
    const pttl = Number((await redis.command('PTTL', 'step:k')).slice(1));
    // (When its day bucket is full again: 60 tokens of a 1,000-a-day plan, 86.4 s each.)
    assert.ok(pttl > 0 && pttl <= 60 * 86_400, `the entry expires with the refill, not in 10 years: PTTL ${pttl}`);
    // No charge in the 10 years' future leaks into the present: once the ban is over the key
    // is served again (the script's own time, 301 s later).
    offset = 301_000;
    const later = await limiter.take('k', FREE);
    assert.equal(later.outcome, 'ok', JSON.stringify(later));
  });

  it('the same reset with a key spent but not banned: nothing refilled by the step, refilled as time goes on from there', async (t) => {
    const redis = await startRedis({ t });
    let offset = TEN_YEARS_MS;
    const limiter = await openRedisLimiter(redis.url, {
      prefix: 'spent:', clock: new ManualClock(), ban: { after: Infinity, seconds: 0 }, logger: silentLogger, clockOffsetMs: () => offset,
    });
    t.after(() => limiter.close());
    for (let i = 0; i < 60; i++) assert.equal((await limiter.take('k', FREE)).outcome, 'ok');
    offset = 0;
    const r = await limiter.take('k', FREE);
    assert.equal(r.outcome, 'rate_limited');
    assert.ok(r.retryAfter <= 2, `a token within a second or so, not in 10 years: ${r.retryAfter}`);
    offset = 2_000;
    assert.equal((await limiter.take('k', FREE)).outcome, 'ok');
  });
});
