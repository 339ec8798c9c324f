// The outage policy, against a real Redis stopped or killed: while Redis does not answer, an id
// the process heard of from Redis goes on from Redis's word either way, and an id it never heard
// of starts full ("open", the default) or empty ("strict"), including in a process started
// while Redis is down (a restart during the outage).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../../src/core/clock.js';
import type { Limits, Logger, LogLevel } from '../../../src/core/index.js';
import { openRedisLimiter, type LimitResult, type RedisLimiter } from '../../../src/limits/index.js';
import { skipUnless } from '../../support/engines.js';
import { startRedis } from '../../support/redis.js';
import { until } from '../../support/wait.js';

const FREE: Limits = { perMinute: 60, perDay: 1000 };
const BAN = { after: 2, seconds: 300 };
const skip = skipUnless('Redis outage policy tests', ['redis']);
// Redis stopped or killed closes the connection, which the link sees at once: no timeout is
// needed to find the outage, and a long one keeps a busy machine's stalls from looking like one.
const SLOW_MACHINE_MS = 10_000;

interface Line { level: LogLevel; msg: string }
function recorder(): Logger & { lines: Line[] } {
  const lines: Line[] = [];
  return { lines, log: (level, msg) => lines.push({ level, msg }) };
}

/** Outcomes of `n` requests of `id`, one after the other. */
async function flood(limiter: RedisLimiter, id: string, n: number): Promise<LimitResult[]> {
  const out: LimitResult[] = [];
  for (let i = 0; i < n; i++) out.push(await limiter.take(id, FREE));
  return out;
}
const admitted = (rs: readonly LimitResult[]): number => rs.filter((r) => r.outcome === 'ok').length;

describe('Redis limiter outage policy', { skip }, () => {
  for (const outage of [undefined, 'open', 'strict'] as const) {
    const name = outage ?? 'default (open)';
    const strict = outage === 'strict';

    it(`${name}: Redis killed; known ids go on from Redis's word, an id never heard of starts ${strict ? 'empty' : 'full'}`, async (t) => {
      const redis = await startRedis({ t });
      const clock = new ManualClock();
      // The script runs on the test's clock too: on Redis's own, a slow machine refills a token
      // while the 119 requests before the kill go one by one (61 admitted of 64 was seen).
      const limiter = await openRedisLimiter(redis.url, {
        prefix: 'o:', clock, ban: BAN, logger: recorder(), probeEveryMs: 50, outage, commandTimeoutMs: SLOW_MACHINE_MS, testTime: () => clock.now(),
      });
      t.after(() => limiter.close());
      assert.equal(admitted(await flood(limiter, 'five-left', 55)), 55);
      assert.equal(admitted(await flood(limiter, 'banned', 64)), 60);
      await redis.kill();
      const fiveLeft = await flood(limiter, 'five-left', 100);
      const banned = await flood(limiter, 'banned', 100);
      const unseen = await flood(limiter, 'never-seen', 100);
      assert.equal(limiter.shared, false);
      assert.equal(admitted(fiveLeft), 5, 'what Redis left it, no more');
      assert.equal(admitted(banned), 0, 'the ban Redis gave holds');
      assert.equal(admitted(unseen), strict ? 0 : 60, 'an id never heard of');
      assert.equal(unseen[0]?.remaining, strict ? '0' : '59');
      await redis.start();
      await until('the limiter uses Redis again', () => limiter.shared);
      assert.equal((await limiter.take('never-seen', FREE)).remaining, '59', 'Redis (back empty) decides again');
    });

    it(`${name}: a process started while Redis is stopped admits an unknown key ${strict ? 'nothing' : 'a full bucket'}, then refills at the plan's rate`, async (t) => {
      const redis = await startRedis({ t });
      const before = await openRedisLimiter(redis.url, { prefix: 'r:', clock: new ManualClock(), ban: BAN, logger: recorder(), outage, commandTimeoutMs: SLOW_MACHINE_MS });
      assert.equal(admitted(await flood(before, 'k', 30)), 30);
      await before.close();
      await redis.stop();
      // The restarted process: it never heard of 'k' from Redis.
      const clock = new ManualClock();
      const log = recorder();
      const limiter = await openRedisLimiter(redis.url, { prefix: 'r:', clock, ban: { after: Infinity, seconds: 0 }, logger: log, probeEveryMs: 50, outage, commandTimeoutMs: SLOW_MACHINE_MS });
      t.after(() => limiter.close());
      assert.equal(limiter.shared, false);
      assert.deepEqual(log.lines.map((l) => l.level), ['error'], 'one error line: Redis does not answer at start');
      assert.equal(admitted(await flood(limiter, 'k', 100)), strict ? 0 : 60);
      clock.advance(10_000);
      // Ten seconds: ten minute tokens; strict's day bucket is empty too (1,000 a day: one per 86.4 s).
      assert.equal(admitted(await flood(limiter, 'k', 100)), strict ? 0 : 10);
      clock.advance(90_000);
      assert.equal(admitted(await flood(limiter, 'k', 100)), strict ? 1 : 60);
      await redis.start();
      await until('the limiter uses Redis again', () => limiter.shared);
      assert.equal((await limiter.take('k', FREE)).remaining, '59', 'Redis (back empty) decides again');
    });
  }
});
