// RateLimit `t` per draft-ietf-httpapi-ratelimit-headers-11 (section 4.1.2: the seconds within
// which the client can use no more than `r`; -10: "until additional quota is made available"):
// for a token bucket, the time until the next whole token. Retry-After never points earlier
// than `t` (section 6), and during a ban every header tells the same story: a client that
// waits as told is never refused again for the same reason.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../src/core/clock.js';
import { call, startBundle, tempDir, writeConfig } from '../support/bundle.js';
import { MemoryLimiter, type BanPolicy, type LimitResult } from '../../src/limits/index.js';
import { header } from '../support/limit-header.js';
import type { Limits } from '../../src/core/index.js';

const START = Date.UTC(2026, 0, 1);
const START_S = START / 1000;
const FIVE: Limits = { perMinute: 5, perDay: 1000 };

function setup(ban: BanPolicy = { after: 20, seconds: 300 }): { clock: ManualClock; limiter: MemoryLimiter } {
  const clock = new ManualClock(START);
  return { clock, limiter: new MemoryLimiter({ clock, ban }) };
}


/** The t parameter of a RateLimit value. */
function t(r: LimitResult): number {
  const m = /;t=(\d+)$/.exec(header(r, 'RateLimit') ?? '');
  assert.ok(m, header(r, 'RateLimit'));
  return Number(m[1]);
}

describe('RateLimit t is the time to the next whole token', () => {
  test('a 5/minute key: every 200 says t=12 (not 12, 24, ... 60), the 429 says t=12 beside Retry-After: 12', () => {
    const { limiter } = setup();
    const seen: string[] = [];
    for (let i = 0; i < 5; i++) {
      const r = limiter.take('k', FIVE);
      assert.equal(r.outcome, 'ok');
      seen.push(header(r, 'RateLimit') ?? '');
    }
    assert.deepEqual(seen, ['"minute";r=4;t=12', '"minute";r=3;t=12', '"minute";r=2;t=12', '"minute";r=1;t=12', '"minute";r=0;t=12']);
    const refused = limiter.take('k', FIVE);
    assert.equal(refused.outcome, 'rate_limited');
    assert.equal(header(refused, 'RateLimit'), '"minute";r=0;t=12');
    assert.equal(header(refused, 'Retry-After'), '12');
    // X-RateLimit-Reset keeps its meaning: the bucket is full again in 60 s.
    assert.equal(header(refused, 'X-RateLimit-Reset'), String(START_S + 60));
  });

  test('t counts down with the refill and rounds up', () => {
    const { clock, limiter } = setup();
    limiter.take('k', FIVE); // 4 tokens left, the fifth back in 12 s
    clock.advance(4_500);
    const r = limiter.take('k', FIVE); // 4.375 tokens before, 3.375 after: next whole in 7.5 s
    assert.equal(header(r, 'RateLimit'), '"minute";r=3;t=8');
  });

  test('the day bucket, when it binds, gives t by its own refill', () => {
    const { limiter } = setup();
    const limits: Limits = { perMinute: 100, perDay: 10 };
    const r = limiter.take('k', limits);
    assert.equal(header(r, 'RateLimit'), '"day";r=9;t=8640');
  });

  // Retry-After >= t on every refusal, over many shapes of plan and many moments.
  const plans: Limits[] = [FIVE, { perMinute: 60, perDay: 1000 }, { perMinute: 7, perDay: 13 }, { perMinute: 60, perDay: 60 }, { perMinute: 1, perDay: 100 }];
  for (const limits of plans) {
    test(`Retry-After is never earlier than t (${limits.perMinute}/min, ${limits.perDay}/day)`, () => {
      const { clock, limiter } = setup({ after: 1_000_000, seconds: 300 });
      clock.advance(0.37);
      let refusals = 0;
      for (let i = 0; i < 5_000; i++) {
        const r = limiter.take('k', limits);
        if (r.outcome !== 'ok') {
          refusals++;
          assert.ok(r.retryAfter >= t(r), `Retry-After ${r.retryAfter} < t ${t(r)} at request ${i}`);
          assert.ok(t(r) >= 1);
        } else {
          assert.ok(t(r) >= 1, header(r, 'RateLimit'));
        }
        clock.advance((i * 7919) % 3_001);
      }
      assert.ok(refusals > 0);
    });
  }
});

describe('bans', () => {
  test('during a ban, Retry-After, RateLimit t and X-RateLimit-Reset all point at its end', () => {
    const { clock, limiter } = setup({ after: 0, seconds: 300 });
    for (let i = 0; i < 60; i++) limiter.take('k', { perMinute: 60, perDay: 1000 });
    assert.equal(limiter.take('k', { perMinute: 60, perDay: 1000 }).outcome, 'rate_limited');
    const banned = limiter.take('k', { perMinute: 60, perDay: 1000 });
    assert.equal(banned.outcome, 'temporarily_banned');
    assert.equal(header(banned, 'Retry-After'), '300');
    assert.equal(header(banned, 'RateLimit'), '"minute";r=0;t=300');
    assert.equal(header(banned, 'X-RateLimit-Reset'), String(START_S + 300));
    assert.equal(header(banned, 'X-RateLimit-Remaining'), '0');
    clock.advance(100_500);
    const later = limiter.take('k', { perMinute: 60, perDay: 1000 });
    assert.equal(header(later, 'Retry-After'), '200');
    assert.equal(header(later, 'RateLimit'), '"minute";r=0;t=200');
    assert.equal(header(later, 'X-RateLimit-Reset'), String(START_S + 300));
  });

  test('a ban shorter than one token\'s refill: its Retry-After covers the refill, so waiting it is enough', () => {
    // 1 per minute, bans of 5 s: the token is back only 60 s after it was spent.
    const limits: Limits = { perMinute: 1, perDay: 100 };
    const { clock, limiter } = setup({ after: 0, seconds: 5 });
    assert.equal(limiter.take('k', limits).outcome, 'ok');
    assert.equal(limiter.take('k', limits).outcome, 'rate_limited');
    const banned = limiter.take('k', limits);
    assert.equal(banned.outcome, 'temporarily_banned');
    assert.equal(banned.retryAfter, 60);
    assert.equal(t(banned), 60);
    clock.advance(banned.retryAfter * 1000);
    assert.equal(limiter.take('k', limits).outcome, 'ok');
  });

  test('the day bucket that binds past the ban\'s end keeps Reset at the day bucket', () => {
    const limits: Limits = { perMinute: 10, perDay: 2 };
    const { limiter } = setup({ after: 0, seconds: 60 });
    limiter.take('k', limits);
    limiter.take('k', limits);
    limiter.take('k', limits); // rate_limited
    const banned = limiter.take('k', limits);
    assert.equal(banned.outcome, 'temporarily_banned');
    // The next day token is 43,200 s away: longer than the ban, so that is the wait.
    assert.equal(banned.retryAfter, 43_200);
    assert.equal(header(banned, 'RateLimit'), '"day";r=0;t=43200');
    assert.equal(header(banned, 'X-RateLimit-Reset'), String(START_S + 86_400));
  });
});

test('against the bundle: a 5/minute key sees t=12 on each 200 and on the 429, with Retry-After: 12', async () => {
  const dir = tempDir();
  const file = writeConfig(dir, { keys: [{ key: 'five-key', plan: 'enterprise', limits: { perMinute: 5, perDay: 1000 } }] });
  const srv = await startBundle(['--memory', '--config', file], { cwd: dir });
  try {
    const values: string[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await call(`${srv.url}/pets`, { key: 'five-key' });
      assert.equal(res.status, 200);
      values.push(res.headers.get('ratelimit') ?? '');
    }
    assert.deepEqual(values, ['"minute";r=4;t=12', '"minute";r=3;t=12', '"minute";r=2;t=12', '"minute";r=1;t=12', '"minute";r=0;t=12']);
    const refused = await call(`${srv.url}/pets`, { key: 'five-key' });
    assert.equal(refused.status, 429);
    assert.equal(refused.headers.get('ratelimit'), '"minute";r=0;t=12');
    assert.equal(refused.headers.get('retry-after'), '12');
  } finally {
    await srv.stop();
  }
});
