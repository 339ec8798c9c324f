// One table of cases, run on both limiters: the in-memory one with a manual clock, and the Redis
// one on a real Redis with the script's time argument (the test-only path; the service uses
// the server's TIME) set to the same instants. Every result, outcome and every header value,
// must be identical, and the outcomes must be the ones the table expects.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../src/core/clock.js';
import { silentLogger, type Limits } from '../../src/core/index.js';
import { MemoryLimiter, openRedisLimiter, type BanPolicy, type LimitOutcome, type LimitResult, type RedisLimiter } from '../../src/limits/index.js';
import { skipUnless } from '../support/engines.js';
import { startRedis, type RedisServer } from '../support/redis.js';

const START = Date.UTC(2026, 0, 1);
const FREE: Limits = { perMinute: 60, perDay: 1000 };
const NO_BAN: BanPolicy = { after: 20, seconds: 0 };

interface Step {
  /** ms since the case's start (dyadic fractions only, so START + at is exact on both sides). */
  readonly at: number;
  /** How many takes at that instant (default 1, or the length of `expect` when a list). */
  readonly n?: number;
  readonly id?: string;
  readonly limits?: Limits;
  /** Every take's outcome, or each take's in order (a list: a run whose answers change). */
  readonly expect: LimitOutcome | readonly LimitOutcome[];
  /** Headers of the last take of the step, checked too. */
  readonly remaining?: string;
  readonly retryAfter?: number;
}

interface Case {
  readonly name: string;
  readonly limits: Limits;
  readonly ban: BanPolicy;
  readonly steps: readonly Step[];
}

/** How many takes a step makes, and the outcome its k-th (from 0) must get. */
const takes = (step: Step): number => step.n ?? (typeof step.expect === 'string' ? 1 : step.expect.length);
const expected = (step: Step, k: number): LimitOutcome => (typeof step.expect === 'string' ? step.expect : step.expect[k] as LimitOutcome);

/** `n` times the same outcome, for a step's list of outcomes. */
const times = (n: number, outcome: LimitOutcome): LimitOutcome[] => Array<LimitOutcome>(n).fill(outcome);

/** 2^-10 ms: with its halves, a fraction that keeps START + at exact (dyadic). */
const TINY = 2 ** -10;

const CASES: readonly Case[] = [
  {
    name: 'a fresh id has full buckets; the minute bucket binds',
    limits: FREE, ban: NO_BAN,
    steps: [{ at: 0, expect: 'ok', remaining: '59' }, { at: 0, expect: 'ok', remaining: '58' }],
  },
  {
    name: 'the minute bucket drains; 429 with Retry-After; waiting it is admitted',
    limits: FREE, ban: NO_BAN,
    steps: [
      { at: 0, n: 60, expect: 'ok' },
      { at: 0, expect: 'rate_limited', remaining: '0', retryAfter: 1 },
      { at: 500, expect: 'rate_limited', retryAfter: 1 },
      { at: 1000, expect: 'ok', remaining: '0' },
      { at: 1000, expect: 'rate_limited' },
      { at: 61_000, n: 60, expect: 'ok' },
    ],
  },
  {
    name: 'a refusal by the minute bucket takes nothing from the day bucket',
    limits: { perMinute: 2, perDay: 5 }, ban: NO_BAN,
    steps: [
      { at: 0, n: 2, expect: 'ok' },
      { at: 0, n: 10, expect: 'rate_limited' },
      // Had the 10 refusals charged the day bucket, these would be refused.
      { at: 60_000, n: 2, expect: 'ok', remaining: '0' },
      { at: 120_000, expect: 'ok', remaining: '0' },
      { at: 180_000, expect: 'rate_limited' },
    ],
  },
  {
    name: 'a refusal by the day bucket takes nothing from the minute bucket',
    limits: { perMinute: 4, perDay: 3 }, ban: NO_BAN,
    steps: [
      { at: 0, n: 3, expect: 'ok' },
      { at: 0, n: 5, expect: 'rate_limited' },
      // One day token back after 8 h; the minute bucket was never charged by the refusals.
      { at: 28_800_000, expect: 'ok' },
      { at: 28_800_000, expect: 'rate_limited' },
    ],
  },
  {
    name: 'ban.after further refusals, then a ban; requests during it neither charge nor extend it',
    limits: FREE, ban: { after: 2, seconds: 10 },
    steps: [
      { at: 0, n: 60, expect: 'ok' },
      { at: 0, n: 3, expect: 'rate_limited' },
      { at: 0, expect: 'temporarily_banned', remaining: '0', retryAfter: 10 },
      { at: 5000, n: 3, expect: 'temporarily_banned', retryAfter: 5 },
      { at: 10_000, n: 10, expect: 'ok' },
      { at: 10_000, expect: 'rate_limited' },
    ],
  },
  {
    name: 'a ban shorter than a token\'s refill: Retry-After covers the refill',
    limits: { perMinute: 1, perDay: 1000 }, ban: { after: 0, seconds: 1 },
    steps: [
      { at: 0, expect: 'ok' },
      { at: 0, expect: 'rate_limited', retryAfter: 60 },
      { at: 0, expect: 'temporarily_banned', retryAfter: 60 },
      { at: 30_000, expect: 'rate_limited', retryAfter: 30 },
      { at: 60_000, expect: 'ok' },
    ],
  },
  {
    name: 'ban.seconds 0: no bans, only 429s',
    limits: { perMinute: 1, perDay: 10 }, ban: { after: 0, seconds: 0 },
    steps: [{ at: 0, expect: 'ok' }, { at: 0, n: 50, expect: 'rate_limited' }],
  },
  {
    name: 'a small plan at fractional instants: waiting exactly Retry-After is admitted',
    limits: { perMinute: 7, perDay: 100 }, ban: { after: 1, seconds: 300 },
    steps: [
      { at: 0.5, n: 7, expect: 'ok' },
      { at: 0.75, expect: 'rate_limited', retryAfter: 9 },
      { at: 9000.75, expect: 'ok' },
      { at: 9001.25, n: 2, expect: 'rate_limited' },
      { at: 9001.5, expect: 'temporarily_banned', retryAfter: 300 },
    ],
  },
  {
    name: 'the largest limits (10^12) count whole tokens',
    limits: { perMinute: 1e12, perDay: 1e12 }, ban: NO_BAN,
    steps: [{ at: 0, n: 5, expect: 'ok', remaining: '999999999995' }, { at: 0.25, expect: 'ok' }],
  },
  {
    name: 'limits that shrink between requests (a reload) clamp the tokens',
    limits: FREE, ban: NO_BAN,
    steps: [
      { at: 0, n: 3, expect: 'ok', remaining: '57' },
      { at: 1000, limits: { perMinute: 10, perDay: 20 }, expect: 'ok', remaining: '9' },
      { at: 1000, limits: { perMinute: 10, perDay: 20 }, n: 9, expect: 'ok' },
      { at: 1000, limits: { perMinute: 10, perDay: 20 }, expect: 'rate_limited' },
    ],
  },
  {
    name: 'a clock that goes back refills nothing',
    limits: { perMinute: 2, perDay: 100 }, ban: NO_BAN,
    steps: [
      { at: 5000, n: 2, expect: 'ok' },
      { at: 3000, expect: 'rate_limited' },
      { at: 33_000, expect: 'ok' },
    ],
  },
  {
    name: 'a clock that goes back keeps a running ban to what it had left, not the step',
    limits: FREE, ban: { after: 0, seconds: 100 },
    steps: [
      { at: 1_000_000, n: 60, expect: 'ok' },
      { at: 1_000_000, expect: ['rate_limited', 'temporarily_banned'], retryAfter: 100 },
      { at: 1_010_000, expect: 'temporarily_banned', retryAfter: 90 },
      // 16 minutes back: 90 s of ban left still, and nothing refilled.
      { at: 10_000, expect: 'temporarily_banned', retryAfter: 90 },
      { at: 99_999.5, expect: 'temporarily_banned', retryAfter: 1 },
      { at: 100_000, n: 60, expect: 'ok', remaining: '0' },
    ],
  },
  {
    name: 'ids are independent (keyless per-address budgets, IPv4 and an IPv6 /64)',
    limits: { perMinute: 2, perDay: 500 }, ban: NO_BAN,
    steps: [
      { at: 0, id: '203.0.113.7', n: 2, expect: 'ok' },
      { at: 0, id: '203.0.113.7', expect: 'rate_limited' },
      { at: 0, id: '2001:db8:1:2::/64', n: 2, expect: 'ok' },
      { at: 0, id: '2001:db8:1:2::/64', expect: 'rate_limited' },
    ],
  },
  // The boundaries of the Redis script's fast path (a run of admitted requests one token
  // apart, script.ts): in the "each step in one run" mode each step below is one script run.
  {
    name: 'a run that empties the minute bucket at its last request, from fractional tokens',
    limits: { perMinute: 5, perDay: 1000 }, ban: NO_BAN,
    steps: [
      { at: 0.25, n: 5, expect: 'ok', remaining: '0' },
      // 2 tokens back and 0.5 ms of refill (2.5 token-ms): the run of 2 ends a hair above 0.
      { at: 24_000.75, n: 2, expect: 'ok', remaining: '0' },
      { at: 24_000.75, expect: 'rate_limited', retryAfter: 12 },
      { at: 36_000.5, n: 1, expect: 'ok', remaining: '0' },
    ],
  },
  {
    name: 'a run that runs out of minute tokens in the middle: the rest refused, then banned',
    limits: { perMinute: 5, perDay: 1000 }, ban: { after: 1, seconds: 30 },
    steps: [
      { at: 0, n: 2, expect: 'ok' },
      { at: 0.5, expect: [...times(3, 'ok'), 'rate_limited', 'rate_limited', 'temporarily_banned', 'temporarily_banned'] },
      { at: 30_000.5, expect: [...times(2, 'ok'), 'rate_limited'] },
    ],
  },
  {
    name: 'a run whose last request is admitted by the slack alone: the minute bucket is clamped at 0',
    limits: FREE, ban: NO_BAN,
    steps: [
      { at: 0, n: 60, expect: 'ok' },
      // 2 tokens less 0.0586 token-ms (2^-10 ms of refill): the run's second request finds
      // 60000 - 0.0586 token-ms, within the slack (60 * 0.001), is admitted and leaves 0, not -0.0586.
      { at: 2000 - TINY, n: 2, expect: 'ok' },
      // One token's refill less 2^-11 ms later: admitted from 0 (by the slack), refused from -0.0586.
      { at: 3000 - TINY - TINY / 2, expect: ['ok', 'rate_limited'] },
      // The same boundary with a run of one request.
      { at: 4000 - 2 * TINY - TINY / 2, expect: 'ok' },
      { at: 5000 - 3 * TINY, expect: 'ok' },
    ],
  },
  {
    name: 'the day bucket ends runs: exactly at a run\'s last request, by the slack, in the middle',
    limits: { perMinute: 10, perDay: 5 }, ban: NO_BAN,
    steps: [
      { at: 0, n: 2, expect: 'ok' },
      { at: 0.5, n: 3, expect: 'ok', remaining: '0' },
      { at: 0.5, expect: 'rate_limited', retryAfter: 17_280 },
      // 3 day tokens less 0.0049 token-ms (within the slack, 5 * 0.001): the third request
      // is admitted and leaves 0.
      { at: 51_840_000 - TINY, n: 3, expect: 'ok', remaining: '0' },
      // One day token's refill less 2^-11 ms later: admitted from 0, refused from -0.0049.
      { at: 69_120_000 - TINY - TINY / 2, expect: ['ok', 'rate_limited'] },
    ],
  },
  {
    name: 'a ban in force refuses a run although both buckets hold tokens',
    limits: FREE, ban: { after: 0, seconds: 100 },
    steps: [
      { at: 0, n: 60, expect: 'ok' },
      { at: 0, expect: ['rate_limited', 'temporarily_banned'], retryAfter: 100 },
      { at: 10_000, n: 5, expect: 'temporarily_banned', retryAfter: 90 },
      { at: 99_999.5, n: 3, expect: 'temporarily_banned', retryAfter: 1 },
      { at: 100_000, n: 60, expect: 'ok', remaining: '0' },
    ],
  },
];

/** A result as plain data, so the two limiters' results compare field by field. */
const plain = (r: LimitResult): Record<string, unknown> => ({ ...r });

interface Taker {
  at(ms: number): void;
  take(id: string, limits: Limits): LimitResult | Promise<LimitResult>;
}

async function run(c: Case, limiter: Taker): Promise<Record<string, unknown>[]> {
  const out: Record<string, unknown>[] = [];
  for (const [i, step] of c.steps.entries()) {
    limiter.at(step.at);
    let last: LimitResult | undefined;
    for (let k = 0; k < takes(step); k++) {
      last = await limiter.take(step.id ?? 'id', step.limits ?? c.limits);
      assert.equal(last.outcome, expected(step, k), `step ${i} (at ${step.at}), take ${k + 1}`);
      out.push(plain(last));
    }
    if (step.remaining !== undefined) assert.equal(last?.remaining, step.remaining, `step ${i} remaining`);
    if (step.retryAfter !== undefined) assert.equal(last?.retryAfter, step.retryAfter, `step ${i} Retry-After`);
  }
  return out;
}

function memoryTaker(c: Case): Taker {
  const clock = new ManualClock(START);
  const limiter = new MemoryLimiter({ clock, ban: c.ban });
  return {
    at: (ms) => clock.advance(ms - clock.monotonic()),
    take: (id, limits) => limiter.take(id, limits),
  };
}

const skip = skipUnless('the Redis limiter against the shared table of cases', ['redis']);

describe('one table of cases, both limiters', () => {
  for (const c of CASES) {
    it(`memory: ${c.name}`, async () => {
      await run(c, memoryTaker(c));
    });
  }
});

/** run(), with each step's takes made in one turn: the Redis limiter charges them in one script run. */
async function runTogether(c: Case, limiter: Taker): Promise<Record<string, unknown>[]> {
  const out: Record<string, unknown>[] = [];
  for (const [i, step] of c.steps.entries()) {
    limiter.at(step.at);
    const taken = await Promise.all(Array.from({ length: takes(step) }, () => limiter.take(step.id ?? 'id', step.limits ?? c.limits)));
    taken.forEach((r, k) => assert.equal(r.outcome, expected(step, k), `step ${i} (at ${step.at}), take ${k + 1}`));
    out.push(...taken.map(plain));
  }
  return out;
}

// Each step's takes one after another, and then in one turn: one script run answers a whole
// step in runs of answers (equal ones, or one token less each), and every request must still
// get exactly what it would get alone.
for (const [mode, runner, prefix] of [
  ['one at a time', run, 'case'],
  ['each step in one run', runTogether, 'together'],
] as const) {
  describe(`the Redis limiter gives the memory limiter's answers, ${mode}`, { skip }, () => {
    let redis: RedisServer;
    const opened: RedisLimiter[] = [];
    before(async () => {
      redis = await startRedis();
    });
    after(async () => {
      for (const l of opened) await l.close();
      await redis.close();
    });

    for (const [n, c] of CASES.entries()) {
      it(`redis, ${mode}: ${c.name}`, async () => {
        const expected = await run(c, memoryTaker(c));
        let now = START;
        const limiter = await openRedisLimiter(redis.url, {
          prefix: `${prefix}${n}:`, clock: new ManualClock(START), ban: c.ban, logger: silentLogger, testTime: () => now,
        });
        opened.push(limiter);
        const got = await runner(c, { at: (ms) => { now = START + ms; }, take: (id, limits) => limiter.take(id, limits) });
        assert.deepEqual(got, expected);
        assert.equal(limiter.shared, true, 'every answer came from Redis');
      });
    }
  });
}
