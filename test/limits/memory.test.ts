import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { ManualClock } from '../../src/core/clock.js';
import { MemoryLimiter, type BanPolicy, type LimitResult } from '../../src/limits/index.js';
import { header } from '../support/limit-header.js';
import type { LimiterState } from '../../src/limits/state.js';
import type { Limits } from '../../src/core/index.js';

const FREE: Limits = { perMinute: 60, perDay: 1000 };
const PRO: Limits = { perMinute: 300, perDay: 10_000 };
const BUSINESS: Limits = { perMinute: 1000, perDay: 100_000 };
const ENTERPRISE: Limits = { perMinute: 5000, perDay: 2_000_000 };
const BAN: BanPolicy = { after: 20, seconds: 300 };
/** Whole seconds, so Reset arithmetic in the tests stays readable. */
const START = Date.UTC(2026, 0, 1);
const START_S = START / 1000;

function setup(ban: BanPolicy = BAN, maxEntries?: number): { clock: ManualClock; limiter: MemoryLimiter } {
  const clock = new ManualClock(START);
  const limiter = new MemoryLimiter(maxEntries === undefined ? { clock, ban } : { clock, ban, maxEntries });
  return { clock, limiter };
}


/** Takes n times, asserting every one is admitted. */
function admit(limiter: MemoryLimiter, id: string, limits: Limits, n: number): LimitResult | undefined {
  let last: LimitResult | undefined;
  for (let i = 0; i < n; i++) {
    last = limiter.take(id, limits);
    assert.equal(last.outcome, 'ok', `request ${i + 1} of ${n} refused`);
  }
  return last;
}

/** Tokens of one id, read from a snapshot (absent = both buckets full). */
function tokens(limiter: MemoryLimiter, id: string): { minute: number; day: number } | undefined {
  const e = limiter.toState().entries.find((x) => x.id === id);
  return e && { minute: e.minute, day: e.day };
}

describe('capacity per plan', () => {
  const table: Array<[string, Limits]> = [
    ['free', FREE],
    ['pro', PRO],
    ['business', BUSINESS],
    ['enterprise (custom)', ENTERPRISE],
  ];
  for (const [name, limits] of table) {
    it(`${name}: exactly ${limits.perMinute} admitted in a burst, then 429`, () => {
      const { limiter } = setup();
      const last = admit(limiter, 'k', limits, limits.perMinute);
      assert.ok(last);
      assert.equal(header(last, 'X-RateLimit-Remaining'), '0');
      assert.equal(header(last, 'X-RateLimit-Limit'), String(limits.perMinute));
      assert.equal(header(last, 'Retry-After'), undefined);
      const refused = limiter.take('k', limits);
      assert.equal(refused.outcome, 'rate_limited');
      assert.equal(header(refused, 'X-RateLimit-Remaining'), '0');
      assert.ok(refused.retryAfter >= 1);
      assert.equal(header(refused, 'Retry-After'), String(refused.retryAfter));
    });
  }

  it('the day bucket caps a key whose day quota is below its minute quota', () => {
    const { limiter } = setup();
    const limits: Limits = { perMinute: 50, perDay: 20 };
    const last = admit(limiter, 'k', limits, 20);
    assert.ok(last);
    assert.equal(header(last, 'X-RateLimit-Limit'), '20');
    const refused = limiter.take('k', limits);
    assert.equal(refused.outcome, 'rate_limited');
    // t: the next day token, 86400 / 20 s away (draft -11 section 4.1.2).
    assert.equal(header(refused, 'RateLimit'), '"day";r=0;t=4320');
  });

  it('a fresh id starts full and ids do not share buckets', () => {
    const { limiter } = setup();
    admit(limiter, 'a', FREE, 60);
    assert.equal(limiter.take('a', FREE).outcome, 'rate_limited');
    const b = limiter.take('b', FREE);
    assert.equal(b.outcome, 'ok');
    assert.equal(header(b, 'X-RateLimit-Remaining'), '59');
  });

  it('RateLimit-Policy lists both buckets (IETF draft syntax)', () => {
    const { limiter } = setup();
    assert.equal(header(limiter.take('k', FREE), 'RateLimit-Policy'), '"minute";q=60;w=60, "day";q=1000;w=86400');
    assert.equal(header(limiter.take('k', PRO), 'RateLimit-Policy'), '"minute";q=300;w=60, "day";q=10000;w=86400');
    // A new Limits object with the same values gives the same text (cached by value).
    assert.equal(header(limiter.take('k', { ...FREE }), 'RateLimit-Policy'), '"minute";q=60;w=60, "day";q=1000;w=86400');
  });

  it('rejects non-positive limits and bad options', () => {
    const { limiter, clock } = setup();
    assert.throws(() => limiter.take('k', { perMinute: 0, perDay: 10 }), RangeError);
    assert.throws(() => limiter.take('k', { perMinute: 10, perDay: Number.NaN }), RangeError);
    assert.throws(() => new MemoryLimiter({ clock, ban: { after: -1, seconds: 1 } }), RangeError);
    assert.throws(() => new MemoryLimiter({ clock, ban: { after: 1, seconds: -1 } }), RangeError);
    assert.throws(() => new MemoryLimiter({ clock, ban: BAN, maxEntries: 0 }), RangeError);
  });
});

describe('refill', () => {
  it('after 1 s an empty free key has exactly 1 token', () => {
    const { clock, limiter } = setup();
    admit(limiter, 'k', FREE, 60);
    clock.advance(999);
    assert.equal(limiter.take('k', FREE).outcome, 'rate_limited');
    clock.advance(1);
    const r = limiter.take('k', FREE);
    assert.equal(r.outcome, 'ok');
    assert.equal(header(r, 'X-RateLimit-Remaining'), '0');
    assert.equal(limiter.take('k', FREE).outcome, 'rate_limited');
  });

  const table: Array<[string, Limits, number, number]> = [
    // name, limits, ms after emptying the minute bucket, whole tokens then available
    ['free after 59 s', FREE, 59_000, 59],
    ['free after 30.5 s', FREE, 30_500, 30],
    ['free after 60 s (full)', FREE, 60_000, 60],
    ['free after 1 h (capped at capacity)', FREE, 3_600_000, 60],
    ['pro after 1 s', PRO, 1000, 5],
    ['pro after 0.2 s', PRO, 200, 1],
    ['business after 3 s', BUSINESS, 3000, 50],
    ['enterprise after 0.012 s', ENTERPRISE, 12, 1],
  ];
  for (const [name, limits, ms, expected] of table) {
    it(`${name}: ${expected} tokens`, () => {
      const { clock, limiter } = setup();
      admit(limiter, 'k', limits, limits.perMinute);
      clock.advance(ms);
      admit(limiter, 'k', limits, expected);
      assert.equal(limiter.take('k', limits).outcome, 'rate_limited');
    });
  }

  it('the day bucket refills at perDay/86400 per second', () => {
    const { clock, limiter } = setup();
    const limits: Limits = { perMinute: 100, perDay: 10 }; // one day token every 8640 s
    admit(limiter, 'k', limits, 10);
    clock.advance(8_639_999);
    assert.equal(limiter.take('k', limits).outcome, 'rate_limited');
    clock.advance(1);
    admit(limiter, 'k', limits, 1);
    assert.equal(limiter.take('k', limits).outcome, 'rate_limited');
  });

  it('Remaining counts whole tokens left after the request', () => {
    const { clock, limiter } = setup();
    admit(limiter, 'k', FREE, 60);
    clock.advance(30_000);
    assert.equal(header(limiter.take('k', FREE), 'X-RateLimit-Remaining'), '29');
    clock.advance(1500); // 29 + 1.5 tokens
    assert.equal(header(limiter.take('k', FREE), 'X-RateLimit-Remaining'), '29');
  });
});

describe('binding bucket', () => {
  it('is the minute bucket on a tie', () => {
    const { limiter } = setup();
    const r = limiter.take('k', { perMinute: 10, perDay: 10 });
    assert.equal(header(r, 'X-RateLimit-Limit'), '10');
    assert.match(header(r, 'RateLimit') ?? '', /^"minute";r=9;t=/);
  });

  it('switches from minute to day as the day quota runs down', () => {
    const { clock, limiter } = setup();
    // One request per second: the minute bucket refills 1/s and stays at 59 after each
    // request, while the day bucket falls by about 1 per request.
    let first: LimitResult | undefined;
    let switchedAt = 0;
    for (let i = 1; i <= 1000 && switchedAt === 0; i++) {
      const r = limiter.take('k', FREE);
      assert.equal(r.outcome, 'ok');
      first ??= r;
      if (header(r, 'X-RateLimit-Limit') === '1000') {
        switchedAt = i;
        assert.match(header(r, 'RateLimit') ?? '', /^"day";r=58;t=\d+$/);
        assert.equal(header(r, 'X-RateLimit-Remaining'), '58');
      }
      clock.advance(1000);
    }
    assert.ok(first);
    assert.equal(header(first, 'X-RateLimit-Limit'), '60');
    assert.equal(header(first, 'RateLimit'), '"minute";r=59;t=1');
    assert.ok(switchedAt > 900, `switched at request ${switchedAt}`);
  });

  it('a refusal by the day bucket reports the day bucket', () => {
    const { limiter } = setup();
    const limits: Limits = { perMinute: 10, perDay: 3 };
    admit(limiter, 'k', limits, 3);
    const r = limiter.take('k', limits);
    assert.equal(r.outcome, 'rate_limited');
    assert.equal(header(r, 'X-RateLimit-Limit'), '3');
    assert.equal(header(r, 'X-RateLimit-Remaining'), '0');
    // 3 tokens missing at 3 per 86400 s: full again in exactly one day.
    assert.equal(header(r, 'X-RateLimit-Reset'), String(START_S + 86_400));
    // A token comes back after 86400/3 s.
    assert.equal(r.retryAfter, 28_800);
  });
});

describe('Reset and Retry-After round up', () => {
  const resetTable: Array<[string, number, Limits, number, number]> = [
    // name, wall offset ms before the requests, limits, requests, expected Reset - START_S
    ['one free token used, whole-second wall', 0, FREE, 1, 1],
    ['one free token used, wall at +0.25 s', 250, FREE, 1, 2], // full at +1.25 s -> 2
    ['two free tokens used', 0, FREE, 2, 2],
    ['one of 7/min used (8.571 s to full)', 0, { perMinute: 7, perDay: 100 }, 1, 9],
    ['nothing used yet (peek)', 0, FREE, 0, 0],
    ['nothing used, wall at +0.001 s (peek)', 1, FREE, 0, 1],
  ];
  for (const [name, offset, limits, n, expected] of resetTable) {
    it(`X-RateLimit-Reset: ${name}`, () => {
      const { clock, limiter } = setup();
      clock.advance(offset);
      const r = n === 0 ? limiter.peek('k', limits) : admit(limiter, 'k', limits, n);
      assert.ok(r);
      assert.equal(header(r, 'X-RateLimit-Reset'), String(START_S + expected));
    });
  }

  it('RateLimit t is the whole seconds, rounded up, until the next whole token', () => {
    const { clock, limiter } = setup();
    admit(limiter, 'k', FREE, 60);
    clock.advance(400); // 0.4 tokens: 0.6 s to the next one, 59.6 s to full
    const r = limiter.take('k', FREE);
    assert.equal(header(r, 'RateLimit'), '"minute";r=0;t=1');
    assert.equal(header(r, 'X-RateLimit-Reset'), String(START_S + 60)); // at +60.0 s exactly
  });

  const retryTable: Array<[string, Limits, number, number]> = [
    // name, limits, ms waited after emptying the minute bucket, expected Retry-After
    ['free, just emptied (1.0 s)', FREE, 0, 1],
    ['free, 0.4 s later (0.6 s)', FREE, 400, 1],
    ['free, 0.999 s later (0.001 s)', FREE, 999, 1],
    ['7/min, just emptied (8.571 s)', { perMinute: 7, perDay: 100 }, 0, 9],
    ['7/min, 8 s later (0.571 s)', { perMinute: 7, perDay: 100 }, 8000, 1],
    ['1/min (60 s)', { perMinute: 1, perDay: 100 }, 0, 60],
  ];
  for (const [name, limits, wait, expected] of retryTable) {
    it(`Retry-After: ${name} -> ${expected}`, () => {
      const { clock, limiter } = setup();
      admit(limiter, 'k', limits, limits.perMinute);
      clock.advance(wait);
      const r = limiter.take('k', limits);
      assert.equal(r.outcome, 'rate_limited');
      assert.equal(r.retryAfter, expected);
      assert.equal(header(r, 'Retry-After'), String(expected));
    });
  }

  it('Retry-After waits for every bucket: the day bucket when it is the slower one', () => {
    const { limiter } = setup();
    // 60/min, 60/day: after 60 requests both are empty; the minute token is back in 1 s,
    // the day token in 1440 s, so only 1440 s guarantees admission.
    const limits: Limits = { perMinute: 60, perDay: 60 };
    admit(limiter, 'k', limits, 60);
    assert.equal(limiter.take('k', limits).retryAfter, 1440);
  });

  it('Retry-After on the free day bucket (86.4 s per token) rounds up to 87', () => {
    const { clock, limiter } = setup();
    // Spend the day quota at one request per second; then the day bucket binds.
    let r = limiter.take('k', FREE);
    while (r.outcome === 'ok') {
      clock.advance(1000);
      r = limiter.take('k', FREE);
    }
    assert.equal(r.outcome, 'rate_limited');
    assert.equal(header(r, 'X-RateLimit-Limit'), '1000');
    const day = tokens(limiter, 'k')?.day ?? Number.NaN;
    assert.ok(day < 1 && day >= 0);
    assert.equal(r.retryAfter, Math.ceil(((1 - day) * 86_400) / 1000 - 1e-9));
    assert.ok(r.retryAfter >= 1 && r.retryAfter <= 87);
  });
});

describe('no double charge', () => {
  it('a request refused by the day bucket takes nothing from the minute bucket', () => {
    const { limiter } = setup();
    const limits: Limits = { perMinute: 10, perDay: 3 };
    admit(limiter, 'k', limits, 3);
    for (let i = 0; i < 5; i++) assert.equal(limiter.take('k', limits).outcome, 'rate_limited');
    assert.deepEqual(tokens(limiter, 'k'), { minute: 7, day: 0 });
  });

  it('a request refused by the minute bucket takes nothing from the day bucket', () => {
    const { limiter } = setup();
    admit(limiter, 'k', FREE, 60);
    for (let i = 0; i < 5; i++) assert.equal(limiter.take('k', FREE).outcome, 'rate_limited');
    assert.deepEqual(tokens(limiter, 'k'), { minute: 0, day: 940 });
  });
});

describe('wall clock jumps', () => {
  const jumps: Array<[string, number]> = [
    ['forward one day', 86_400_000],
    ['back one day', -86_400_000],
    ['back to 1970', -START],
  ];
  for (const [name, ms] of jumps) {
    it(`${name}: no bucket fills or empties`, () => {
      const { clock, limiter } = setup();
      admit(limiter, 'empty', FREE, 60);
      admit(limiter, 'half', FREE, 30);
      clock.jumpWall(ms);
      assert.equal(limiter.take('empty', FREE).outcome, 'rate_limited');
      admit(limiter, 'half', FREE, 30);
      assert.equal(limiter.take('half', FREE).outcome, 'rate_limited');
      admit(limiter, 'fresh', FREE, 60);
      clock.advance(1000);
      admit(limiter, 'empty', FREE, 1);
      assert.equal(limiter.take('empty', FREE).outcome, 'rate_limited');
    });
  }

  it('Reset follows the wall clock, buckets do not', () => {
    const { clock, limiter } = setup();
    clock.jumpWall(-10_000);
    const r = limiter.take('k', FREE);
    assert.equal(header(r, 'X-RateLimit-Reset'), String(START_S - 10 + 1));
  });
});

describe('ban', () => {
  /** Takes until the first refusal and returns the outcomes from that refusal on. */
  function outcomesAfterDraining(limiter: MemoryLimiter, n: number): LimitResult[] {
    admit(limiter, 'k', FREE, 60);
    return Array.from({ length: n }, () => limiter.take('k', FREE));
  }

  for (const after of [0, 1, 3, 20]) {
    it(`after=${after}: ${1 + after} responses rate_limited, then a ban`, () => {
      const { limiter } = setup({ after, seconds: 300 });
      const results = outcomesAfterDraining(limiter, after + 5);
      const limited = results.filter((r) => r.outcome === 'rate_limited').length;
      assert.equal(limited, 1 + after);
      for (let i = 0; i <= after; i++) assert.equal(results[i]?.outcome, 'rate_limited', `response ${i + 1}`);
      for (let i = after + 1; i < results.length; i++) {
        assert.equal(results[i]?.outcome, 'temporarily_banned', `response ${i + 1}`);
      }
      const first = results[after + 1];
      assert.ok(first);
      assert.equal(first.retryAfter, 300);
      assert.equal(header(first, 'Retry-After'), '300');
      assert.equal(header(first, 'X-RateLimit-Remaining'), '0');
    });
  }

  it('lasts ban.seconds, reports the time left and is not extended by requests', () => {
    const { clock, limiter } = setup({ after: 2, seconds: 300 });
    const results = outcomesAfterDraining(limiter, 4);
    assert.equal(results[3]?.outcome, 'temporarily_banned');
    const steps: Array<[number, number]> = [
      // ms advanced, expected Retry-After
      [0, 300],
      [100_000, 200],
      [99_500, 101], // 100.5 s left
      [100_000, 1], // 0.5 s left
      [499, 1], // 0.001 s left
    ];
    for (const [ms, expected] of steps) {
      clock.advance(ms);
      for (let i = 0; i < 3; i++) {
        const r = limiter.take('k', FREE);
        assert.equal(r.outcome, 'temporarily_banned');
        assert.equal(r.retryAfter, expected);
        assert.equal(header(r, 'Retry-After'), String(expected));
      }
    }
    clock.advance(1); // exactly 300 s after the ban started
    assert.equal(limiter.take('k', FREE).outcome, 'ok');
  });

  it('takes no tokens during a ban, and the counter is 0 when it ends', () => {
    const { clock, limiter } = setup({ after: 1, seconds: 5 });
    const results = outcomesAfterDraining(limiter, 3);
    assert.deepEqual(results.map((r) => r.outcome), ['rate_limited', 'rate_limited', 'temporarily_banned']);
    for (let i = 0; i < 4; i++) {
      clock.advance(1000);
      assert.equal(limiter.take('k', FREE).outcome, 'temporarily_banned');
    }
    clock.advance(1000); // ban over; 5 s refilled 5 tokens, none spent during the ban
    admit(limiter, 'k', FREE, 5);
    const again = Array.from({ length: 3 }, () => limiter.take('k', FREE).outcome);
    assert.deepEqual(again, ['rate_limited', 'rate_limited', 'temporarily_banned']);
  });

  it('an admitted request resets the count of refusals', () => {
    const { clock, limiter } = setup({ after: 2, seconds: 300 });
    outcomesAfterDraining(limiter, 3); // 3 refusals: one short of a ban
    clock.advance(1000);
    admit(limiter, 'k', FREE, 1);
    const again = Array.from({ length: 4 }, () => limiter.take('k', FREE).outcome);
    assert.deepEqual(again, ['rate_limited', 'rate_limited', 'rate_limited', 'temporarily_banned']);
  });

  it('bans one id only', () => {
    const { limiter } = setup({ after: 0, seconds: 300 });
    outcomesAfterDraining(limiter, 2);
    assert.equal(limiter.take('k', FREE).outcome, 'temporarily_banned');
    assert.equal(limiter.take('other', FREE).outcome, 'ok');
  });

  it('ban.seconds = 0 disables bans', () => {
    const { limiter } = setup({ after: 0, seconds: 0 });
    const results = outcomesAfterDraining(limiter, 50);
    assert.ok(results.every((r) => r.outcome === 'rate_limited'));
  });

  const politeCases: Array<[string, Limits, number, number]> = [
    // name, limits, ban.after, fractional start offset of the clock in ms
    ['free, after=0', FREE, 0, 0],
    ['free, after=0, fractional clock', FREE, 0, 0.37],
    ['7/min 13/day, after=0, fractional clock', { perMinute: 7, perDay: 13 }, 0, 123.456],
    ['pro, after=20', PRO, 20, 0.1],
    ['enterprise, after=0', ENTERPRISE, 0, 0.999],
  ];
  for (const [name, limits, after, offset] of politeCases) {
    it(`a client that waits Retry-After is never banned (${name})`, () => {
      const { clock, limiter } = setup({ after, seconds: 300 });
      clock.advance(offset);
      let admitted = 0;
      let refusals = 0;
      let waitedLast = false;
      // Many rounds of "send until refused, then wait exactly Retry-After": covers the
      // minute bucket and, over time, the day bucket with its fractional refill.
      for (let round = 0; round < 20_000; round++) {
        const r = limiter.take('k', limits);
        if (r.outcome === 'ok') {
          admitted++;
          waitedLast = false;
          continue;
        }
        assert.equal(r.outcome, 'rate_limited', `round ${round}`);
        assert.equal(waitedLast, false, `round ${round}: refused right after waiting Retry-After`);
        refusals++;
        clock.advance(r.retryAfter * 1000);
        waitedLast = true;
      }
      assert.ok(refusals > 10, `only ${refusals} refusals`);
      assert.ok(admitted > 10);
    });
  }

  it('a client that waits Retry-After plus jitter is never banned', () => {
    const { clock, limiter } = setup({ after: 0, seconds: 300 });
    let seed = 42;
    const random = (): number => {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
      return seed / 2_147_483_648;
    };
    for (let round = 0; round < 20_000; round++) {
      const r = limiter.take('k', FREE);
      assert.notEqual(r.outcome, 'temporarily_banned', `round ${round}`);
      if (r.outcome === 'rate_limited') clock.advance(r.retryAfter * 1000 + random() * 3000);
      else if (random() < 0.3) clock.advance(random() * 2000);
    }
  });
});

describe('limits changed between calls', () => {
  it('a larger capacity does not add tokens; the new rate applies from then on', () => {
    const { clock, limiter } = setup();
    admit(limiter, 'k', FREE, 10); // 50 left
    const r = limiter.take('k', PRO);
    assert.equal(header(r, 'X-RateLimit-Limit'), '300');
    assert.equal(header(r, 'X-RateLimit-Remaining'), '49');
    assert.equal(header(r, 'RateLimit-Policy'), '"minute";q=300;w=60, "day";q=10000;w=86400');
    admit(limiter, 'k', PRO, 49);
    assert.equal(limiter.take('k', PRO).outcome, 'rate_limited');
    clock.advance(1000); // 5 tokens at the pro rate
    admit(limiter, 'k', PRO, 5);
    assert.equal(limiter.take('k', PRO).outcome, 'rate_limited');
  });

  it('a smaller capacity clamps the tokens', () => {
    const { limiter } = setup();
    admit(limiter, 'k', PRO, 1); // 299 left
    const r = limiter.take('k', FREE);
    assert.equal(header(r, 'X-RateLimit-Limit'), '60');
    assert.equal(header(r, 'X-RateLimit-Remaining'), '59');
    admit(limiter, 'k', FREE, 59);
    assert.equal(limiter.take('k', FREE).outcome, 'rate_limited');
  });
});

describe('peek', () => {
  it('reports headers without charging or counting a refusal', () => {
    const { limiter } = setup({ after: 0, seconds: 300 });
    const p = limiter.peek('k', FREE);
    assert.equal(p.outcome, 'ok');
    assert.equal(limiter.size, 0, 'peeking an unknown id stores nothing');
    assert.equal(header(p, 'X-RateLimit-Remaining'), '60');
    // Full: spent at once, the first token is back after one token's refill (1 s).
    assert.equal(header(p, 'RateLimit'), '"minute";r=60;t=1');
    admit(limiter, 'k', FREE, 60);
    for (let i = 0; i < 5; i++) {
      const q = limiter.peek('k', FREE);
      assert.equal(q.outcome, 'rate_limited');
      assert.equal(q.retryAfter, 1);
      assert.equal(header(q, 'Retry-After'), '1');
    }
    // Peeks did not count: the first real refusal is still a plain 429 (after = 0).
    assert.equal(limiter.take('k', FREE).outcome, 'rate_limited');
    assert.equal(limiter.take('k', FREE).outcome, 'temporarily_banned');
    assert.equal(limiter.peek('k', FREE).outcome, 'temporarily_banned');
  });
});

describe('retain, reset, maxEntries', () => {
  it('retain() drops the ids not in the set', () => {
    const { limiter } = setup();
    for (const id of ['a', 'b', 'c']) admit(limiter, id, FREE, 60);
    limiter.retain(new Set(['a', 'c', 'unknown']));
    assert.equal(limiter.size, 2);
    assert.equal(limiter.take('a', FREE).outcome, 'rate_limited');
    assert.equal(limiter.take('c', FREE).outcome, 'rate_limited');
    assert.equal(header(limiter.take('b', FREE), 'X-RateLimit-Remaining'), '59');
  });

  it('reset() forgets buckets and bans', () => {
    const { limiter } = setup({ after: 0, seconds: 300 });
    admit(limiter, 'k', FREE, 60);
    limiter.take('k', FREE);
    assert.equal(limiter.take('k', FREE).outcome, 'temporarily_banned');
    limiter.reset();
    assert.equal(limiter.size, 0);
    assert.equal(header(limiter.take('k', FREE), 'X-RateLimit-Remaining'), '59');
  });

  it('evicts the least recently used id', () => {
    const { limiter } = setup(BAN, 3);
    for (const id of ['a', 'b', 'c']) admit(limiter, id, FREE, 1);
    admit(limiter, 'a', FREE, 1); // a is now the youngest; b the oldest
    admit(limiter, 'd', FREE, 1);
    assert.equal(limiter.size, 3);
    assert.deepEqual(limiter.toState().entries.map((e) => e.id), ['c', 'a', 'd']);
    assert.equal(header(limiter.take('a', FREE), 'X-RateLimit-Remaining'), '57');
  });

  it('1,000,000 distinct ids with maxEntries 10,000 leave 10,000 entries', () => {
    const { limiter } = setup(BAN, 10_000);
    const limits: Limits = { perMinute: 30, perDay: 500 };
    for (let i = 0; i < 1_000_000; i++) {
      limiter.take(`ip:${i}`, limits);
      if ((i & 0xffff) === 0) assert.ok(limiter.size <= 10_000);
    }
    assert.equal(limiter.size, 10_000);
    const ids = limiter.toState().entries.map((e) => e.id);
    assert.equal(ids[0], 'ip:990000');
    assert.equal(ids.at(-1), 'ip:999999');
  });
});

describe('toState / restore', () => {
  /** Snapshot through JSON, as it would go through a file. */
  function viaJson(state: LimiterState): LimiterState {
    return JSON.parse(JSON.stringify(state)) as LimiterState;
  }

  /** A second limiter on a new clock: monotonic origin 0, wall at `wall`. */
  function restarted(wall: number, state: LimiterState, ban: BanPolicy = BAN): { clock: ManualClock; limiter: MemoryLimiter } {
    const clock = new ManualClock(wall);
    const limiter = new MemoryLimiter({ clock, ban });
    limiter.restore(viaJson(state));
    return { clock, limiter };
  }

  it('round trip keeps buckets, refusal counts and LRU order', () => {
    const { clock, limiter } = setup({ after: 3, seconds: 300 });
    clock.advance(5_000_000); // the old process's monotonic origin differs from the new one
    admit(limiter, 'a', FREE, 60);
    limiter.take('a', FREE); // one refusal
    admit(limiter, 'b', PRO, 10);
    const state = limiter.toState();
    assert.deepEqual(state.entries.map((e) => e.id), ['a', 'b']);
    const { limiter: l2 } = restarted(state.savedAt, state, { after: 3, seconds: 300 });
    assert.equal(l2.size, 2);
    assert.deepEqual(l2.toState().entries, state.entries);
    // a keeps its refusal: 3 more 429s (not 4) before the ban.
    const outcomes = Array.from({ length: 4 }, () => l2.take('a', FREE).outcome);
    assert.deepEqual(outcomes, ['rate_limited', 'rate_limited', 'rate_limited', 'temporarily_banned']);
    assert.equal(header(l2.take('b', PRO), 'X-RateLimit-Remaining'), '289');
  });

  it('leaves out ids whose state equals a fresh one', () => {
    const { clock, limiter } = setup();
    admit(limiter, 'idle', FREE, 5);
    admit(limiter, 'busy', FREE, 60);
    limiter.take('busy', FREE); // a refusal keeps it in the snapshot even once refilled
    clock.advance(86_400_000);
    assert.deepEqual(limiter.toState().entries.map((e) => e.id), ['busy']);
  });

  it('refills for the wall time elapsed since the snapshot', () => {
    const { limiter } = setup();
    admit(limiter, 'k', FREE, 60);
    const state = limiter.toState();
    const { limiter: l2 } = restarted(state.savedAt + 30_000, state);
    assert.deepEqual(tokens(l2, 'k'), { minute: 30, day: 940 + (30 * 1000) / 86_400 });
    admit(l2, 'k', FREE, 30);
    assert.equal(l2.take('k', FREE).outcome, 'rate_limited');
  });

  it('a wall clock that went back refills nothing', () => {
    const { limiter } = setup();
    admit(limiter, 'k', FREE, 60);
    const state = limiter.toState();
    const { clock, limiter: l2 } = restarted(state.savedAt - 3_600_000, state);
    assert.deepEqual(tokens(l2, 'k'), { minute: 0, day: 940 });
    assert.equal(l2.take('k', FREE).outcome, 'rate_limited');
    clock.advance(1000); // from here on, monotonic time refills as usual
    admit(l2, 'k', FREE, 1);
  });

  const banCases: Array<[string, number, number | undefined]> = [
    // name, wall ms between snapshot and restore, expected Retry-After (undefined: ban over)
    ['restored with the remaining time', 50_000, 150],
    ['restored in full when the wall clock went back', -3_600_000, 200],
    ['over when the downtime outlasted it', 200_000, undefined],
  ];
  for (const [name, downtime, expected] of banCases) {
    it(`a ban is ${name}`, () => {
      const { clock, limiter } = setup({ after: 0, seconds: 300 });
      admit(limiter, 'k', FREE, 60);
      limiter.take('k', FREE);
      assert.equal(limiter.take('k', FREE).outcome, 'temporarily_banned');
      clock.advance(100_000); // 200 s left
      const state = limiter.toState();
      assert.equal(state.entries[0]?.banMs, 200_000);
      const { limiter: l2 } = restarted(state.savedAt + downtime, state, { after: 0, seconds: 300 });
      const r = l2.take('k', FREE);
      if (expected === undefined) {
        assert.equal(r.outcome, 'ok');
      } else {
        assert.equal(r.outcome, 'temporarily_banned');
        assert.equal(r.retryAfter, expected);
      }
    });
  }

  it('restore replaces the current state and honours maxEntries', () => {
    const { limiter } = setup();
    for (let i = 0; i < 5; i++) admit(limiter, `k${i}`, FREE, 1);
    const state = limiter.toState();
    const { limiter: small } = setup(BAN, 2);
    admit(small, 'other', FREE, 1);
    small.restore(viaJson(state));
    assert.equal(small.size, 2);
    assert.deepEqual(small.toState().entries.map((e) => e.id), ['k3', 'k4']);
  });

  it('restore is all or nothing: a bad entry leaves the current state alone', () => {
    const { limiter } = setup();
    admit(limiter, 'k', FREE, 60);
    const good = limiter.toState().entries[0];
    assert.ok(good);
    const bad: LimiterState = { version: 1, savedAt: START, entries: [good, { ...good, id: 'x', perDay: 0 }] };
    assert.throws(() => limiter.restore(bad), RangeError);
    assert.equal(limiter.size, 1);
    assert.equal(limiter.take('k', FREE).outcome, 'rate_limited');
  });

  it('restore rejects an unknown version', () => {
    const { limiter } = setup();
    const bad = { version: 2, savedAt: START, entries: [] } as unknown as LimiterState;
    assert.throws(() => limiter.restore(bad), /version/);
  });
});

describe('configure (a config reload)', () => {
  it('a new ban policy applies from the next refusal, and a smaller bound evicts at once', () => {
    const { limiter } = setup({ after: 20, seconds: 300 }, 100);
    const tiny: Limits = { perMinute: 1, perDay: 100 };
    assert.equal(limiter.take('a', tiny).outcome, 'ok');
    assert.equal(limiter.take('a', tiny).outcome, 'rate_limited');
    limiter.configure({ after: 1, seconds: 60 }, 100);
    assert.equal(limiter.take('a', tiny).outcome, 'rate_limited');
    const banned = limiter.take('a', tiny);
    assert.equal(banned.outcome, 'temporarily_banned');
    assert.equal(banned.retryAfter, 60);
    for (let i = 0; i < 50; i++) limiter.take(`id${i}`, FREE);
    assert.equal(limiter.size, 51);
    limiter.configure({ after: 1, seconds: 60 }, 10);
    assert.equal(limiter.size, 10);
    assert.throws(() => limiter.configure({ after: -1, seconds: 1 }), RangeError);
  });
});

describe('very large plans', () => {
  it('Remaining never exceeds the Limit', () => {
    const { limiter } = setup();
    const huge: Limits = { perMinute: 1_000_000_000, perDay: 1_000_000_000_000 };
    for (let i = 0; i < 3; i++) {
      const r = limiter.take('big', huge);
      assert.equal(r.outcome, 'ok');
      assert.ok(Number(header(r, 'X-RateLimit-Remaining')) <= 1_000_000_000, header(r, 'X-RateLimit-Remaining'));
    }
  });
});

describe('named snapshots (exportSnapshot, prepareImport)', () => {
  /** A small deterministic generator, so that a failure can be replayed. */
  function random(seed: number): () => number {
    let s = seed >>> 0;
    return () => {
      s = (s + 0x6d2b79f5) >>> 0;
      let t = s;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }
  const turn = (): Promise<void> => new Promise((r) => setImmediate(r));

  it('an export is the state at the call, whatever requests do while it is written in chunks', async () => {
    for (const seed of [1, 2, 3, 4]) {
      const { clock, limiter } = setup({ after: 2, seconds: 300 }, 40_000);
      const pick = random(seed);
      const ids = (n: number): string => `10.${n >> 16}.${(n >> 8) & 255}.${n & 255}`;
      for (let i = 0; i < 60_000; i++) limiter.take(ids(Math.floor(pick() * 60_000)), FREE);
      clock.advance(1234);
      const quiet = await limiter.exportSnapshot();
      const exporting = limiter.exportSnapshot();
      // Between the chunks: charges (moving ids to the young end, from the old part's start,
      // middle and end), refusals and bans, new ids, evictions of old ones, peeks.
      let turns = 0;
      let settled = false;
      void exporting.then(() => { settled = true; });
      while (!settled) {
        for (let k = 0; k < 300; k++) {
          const r = pick();
          if (r < 0.5) limiter.take(ids(Math.floor(pick() * 60_000)), FREE);
          else if (r < 0.6) for (let j = 0; j < 5; j++) limiter.take('hot', { perMinute: 1, perDay: 10 });
          else if (r < 0.8) limiter.take(ids(100_000 + Math.floor(pick() * 100_000)), FREE);
          else limiter.peek(ids(Math.floor(pick() * 60_000)), FREE);
        }
        clock.advance(7);
        turns++;
        await turn();
      }
      assert.ok(turns > 1, `the export gave the event loop a turn (${turns})`);
      assert.deepEqual(await exporting, quiet, `seed ${seed}`);
    }
  });

  it('ids charged from the young end backwards while an export runs keep their places in it', async () => {
    const { limiter } = setup();
    for (let i = 0; i < 6000; i++) limiter.take(`id-${i}`, FREE);
    const quiet = await limiter.exportSnapshot();
    const exporting = limiter.exportSnapshot(); // its first chunk is written at the call
    limiter.take('new', FREE); // from now on the old part's last id is not the youngest
    for (let i = 5999; i > 5500; i--) limiter.take(`id-${i}`, FREE);
    for (let i = 5500; i > 5000; i -= 3) limiter.take(`id-${i}`, FREE);
    await turn();
    for (let i = 5000; i > 4090; i--) limiter.take(`id-${i}`, FREE);
    assert.deepEqual(await exporting, quiet);
  });

  it('an export racing a reset and a smaller bound is still the state at the call', async () => {
    const { limiter } = setup(BAN, 50_000);
    for (let i = 0; i < 30_000; i++) limiter.take(`id-${i}`, FREE);
    const quiet = await limiter.exportSnapshot();
    const exporting = limiter.exportSnapshot();
    await turn();
    limiter.configure(BAN, 10_000); // evicts the 20,000 oldest at once
    await turn();
    limiter.take('id-29999', FREE);
    limiter.reset();
    limiter.take('id-1', FREE);
    assert.deepEqual(await exporting, quiet);
  });

  it('an import is built aside in chunks and swapped in at once; the time it took does not count', async () => {
    const { clock, limiter } = setup({ after: 1, seconds: 60 });
    for (let i = 0; i < 10_000; i++) limiter.take(`id-${i}`, FREE);
    for (let i = 0; i < 5; i++) limiter.take('banned', { perMinute: 1, perDay: 10 });
    const saved = await limiter.exportSnapshot();
    const bannedBefore = limiter.peek('banned', { perMinute: 1, perDay: 10 });
    limiter.reset();
    limiter.take('later', FREE);
    const preparing = limiter.prepareImport(saved);
    let turns = 0;
    let swap: (() => void) | undefined;
    void preparing.then((s) => { swap = s; });
    while (swap === undefined) {
      assert.equal(limiter.size, 1, 'nothing of the import shows before the swap');
      clock.advance(1000);
      turns++;
      await turn();
    }
    assert.ok(turns > 1, `the import gave the event loop a turn (${turns})`);
    clock.advance(5000);
    swap();
    assert.equal(limiter.size, 10_001);
    assert.deepEqual(await limiter.exportSnapshot(), saved, 'every id exactly as saved');
    assert.equal(limiter.peek('banned', { perMinute: 1, perDay: 10 }).retryAfter, bannedBefore.retryAfter);
  });
});

describe('named snapshots: what an import leaves on the V8 heap', () => {
  it('a prepared import of 100,000 ids holds no object per id (under 80 heap bytes an id: its index entry and its id slot, about 45)', async () => {
    // An object per id (about 220 bytes with its boxed numbers) is what made the young
    // generation's collector copy tens of MB during a restore; typed arrays live outside it.
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const { limiter } = setup();
    for (let i = 0; i < 100_000; i++) limiter.take(`10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`, FREE);
    const saved = await limiter.exportSnapshot();
    const target = setup().limiter;
    gc();
    gc();
    const before = process.memoryUsage().heapUsed;
    const swap = await target.prepareImport(saved);
    gc();
    gc();
    const perId = (process.memoryUsage().heapUsed - before) / 100_000;
    swap();
    assert.equal(target.size, 100_000);
    assert.ok(perId < 80, `${perId.toFixed(1)} heap bytes an id`);
  });

  it('slots freed while an export runs are reused by new ids without disturbing it', async () => {
    const { limiter } = setup(BAN, 5000);
    for (let i = 0; i < 5000; i++) limiter.take(`id-${i}`, FREE);
    const quiet = await limiter.exportSnapshot();
    const exporting = limiter.exportSnapshot();
    // Each new id evicts the oldest and takes its slot, ahead of the export's cursor too.
    for (let i = 0; i < 3000; i++) limiter.take(`new-${i}`, FREE);
    await new Promise((r) => setImmediate(r));
    for (let i = 3000; i < 6000; i++) limiter.take(`new-${i}`, FREE);
    assert.deepEqual(await exporting, quiet);
    assert.equal(limiter.size, 5000);
    assert.equal(limiter.toState().entries.length, 5000);
    assert.deepEqual((await limiter.exportSnapshot()).ids, Array.from({ length: 5000 }, (_, i) => `new-${i + 1000}`));
  });
});
