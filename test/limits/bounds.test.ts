// The bounds of the rate-limit settings: ban.seconds 0 means "no bans",
// rates are bounded so the limiter's arithmetic stays exact, and at those extremes a bucket
// still refuses when it is empty.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../src/core/clock.js';
import { parseConfig } from '../../src/config/index.js';
import { call, startBundle, tempDir, writeConfig } from '../support/bundle.js';
import { MemoryLimiter, type LimitResult } from '../../src/limits/index.js';
import { header } from '../support/limit-header.js';
import { MAX_LIMIT, type Limits } from '../../src/core/index.js';
import { problems } from '../support/config-problems.js';



describe('config bounds', () => {
  test('ban.seconds 0 is accepted: no bans', () => {
    assert.deepEqual(parseConfig({ ban: { after: 3, seconds: 0 } }, 'test.json', '/srv').ban, { after: 3, seconds: 0 });
  });

  const refused: Array<[string, unknown, RegExp]> = [
    ['ban.seconds negative', { ban: { after: 3, seconds: -1 } }, /ban\.seconds/],
    ['ban.seconds fractional', { ban: { after: 3, seconds: 1.5 } }, /ban\.seconds/],
    ['ban.seconds over a year', { ban: { after: 3, seconds: 31_536_001 } }, /ban\.seconds/],
    ['a plan above 10^12 per minute', { plans: { big: { perMinute: MAX_LIMIT + 1, perDay: 1 } } }, /plans\.big\.perMinute/],
    ['a plan above 10^12 per day', { plans: { big: { perMinute: 1, perDay: 1e15 } } }, /plans\.big\.perDay/],
    ['key limits above 10^12', { keys: [{ key: 'abc', plan: 'enterprise', limits: { perMinute: 6e7, perDay: 2 ** 53 - 1 } }] }, /keys\[0\]\.limits\.perDay/],
    ['anonymous above 10^12', { anonymous: { perMinute: 1e13, perDay: 1 } }, /anonymous\.perMinute/],
  ];
  for (const [name, raw, re] of refused) {
    test(`refused: ${name}`, () => {
      const found = problems(raw);
      assert.ok(found.some((p) => re.test(p)), JSON.stringify(found));
    });
  }

  test('10^12 per minute and per day is accepted', () => {
    const c = parseConfig({ plans: { max: { perMinute: MAX_LIMIT, perDay: MAX_LIMIT } } }, 'test.json', '/srv');
    assert.deepEqual(c.plans.get('max'), { perMinute: MAX_LIMIT, perDay: MAX_LIMIT });
  });
});

describe('the limiter at the largest rates', () => {
  const extremes: Array<[string, Limits]> = [
    ['10^12 per minute and per day (the largest allowed)', { perMinute: MAX_LIMIT, perDay: MAX_LIMIT }],
    ['10^9 per minute, 10^12 per day (the bench\'s "unlimited")', { perMinute: 1_000_000_000, perDay: MAX_LIMIT }],
    ['10^8 per minute', { perMinute: 100_000_000, perDay: 100_000_000 }],
    ['6 * 10^7 per minute', { perMinute: 60_000_000, perDay: 100_000_000 }],
    ['10^7 per minute', { perMinute: 10_000_000, perDay: 100_000_000 }],
  ];
  for (const [name, limits] of extremes) {
    test(`${name}: Remaining falls by one per request, and an empty bucket refuses`, () => {
      const clock = new ManualClock();
      const limiter = new MemoryLimiter({ clock, ban: { after: 0, seconds: 0 } });
      const first = limiter.take('k', limits);
      assert.equal(first.outcome, 'ok');
      assert.equal(first.remaining, String(limits.perMinute - 1));
      assert.equal(limiter.take('k', limits).remaining, String(limits.perMinute - 2));
      // An empty minute bucket (as a snapshot holds it; spending 10^8 requests one by one
      // would take a while) must refuse until a whole token has come back.
      limiter.restore({
        version: 1,
        savedAt: clock.now(),
        entries: [{ id: 'k', perMinute: limits.perMinute, perDay: limits.perDay, minute: 0, day: 5, strikes: 0, banMs: 0 }],
      });
      const refused = limiter.take('k', limits);
      assert.equal(refused.outcome, 'rate_limited');
      assert.equal(refused.remaining, '0');
      assert.equal(header(refused, 'Retry-After'), '1');
      // One token comes back after 60,000 / perMinute ms.
      clock.advance((60_000 / limits.perMinute) * 0.5);
      assert.equal(limiter.take('k', limits).outcome, 'rate_limited');
      clock.advance(60_000 / limits.perMinute);
      const again = limiter.take('k', limits);
      assert.equal(again.outcome, 'ok');
      assert.equal(again.remaining, '0');
    });
  }
});

test('ban.seconds 0 in a config file: a client that keeps sending gets 429 rate_limited, never a ban', async () => {
  const dir = tempDir();
  const file = writeConfig(dir, {
    keys: [{ key: 'slow-key', plan: 'enterprise', limits: { perMinute: 1, perDay: 100 } }],
    ban: { after: 1, seconds: 0 },
  });
  const srv = await startBundle(['--memory', '--config', file], { cwd: dir });
  try {
    const codes: string[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await call(`${srv.url}/pets`, { key: 'slow-key' });
      codes.push(res.status === 200 ? 'ok' : (res.json as { code: string }).code);
    }
    assert.deepEqual(codes, ['ok', 'rate_limited', 'rate_limited', 'rate_limited', 'rate_limited', 'rate_limited']);
  } finally {
    await srv.stop();
  }
});
