// The take script's fast path (script.ts: a run of admitted requests one token apart) against
// its general loop, on a real Redis: from the same stored state, the same arguments and the
// same time, the script as shipped and the script with its fast path switched off must give
// the same reply string and leave the same hash, byte for byte (numbers are written with
// %.17g, so equal text is equal doubles). The answers against the memory limiter are in
// limiter-cases.test.ts; this compares what the answers do not show, such as the stored tokens
// of the largest plans, where each subtraction rounds.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Redis } from 'ioredis';
import { TAKE_SCRIPT } from '../../../src/limits/redis/script.js';
import { skipUnless } from '../../support/engines.js';
import type { RedisServer } from '../../support/redis.js';
import { shareRedis } from '../../support/shared-redis.js';

const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;
const START = Date.UTC(2026, 0, 1);
const skip = skipUnless('the Redis take script\'s fast path', ['redis']);

/** `from` with `find` replaced by `by`, which must be there exactly once. */
function variant(from: string, find: string, by: string): string {
  assert.equal(from.split(find).length, 2, `the script has one ${JSON.stringify(find)}`);
  return from.replace(find, by);
}

// The general loop alone: the fast path's condition never holds.
const GENERAL = variant(TAKE_SCRIPT, 'local fast = false\nif ', 'local fast = false\nif false and ');
// The script as shipped, telling whether its fast path answered (an extra last field).
const TELLING = variant(TAKE_SCRIPT, "return table.concat(reply, ' ')", "if fast then reply[#reply + 1] = 'fast' end\nreturn table.concat(reply, ' ')");

interface State { m: number; d: number; at: number; k: number; b: number }

/** Starting minute (or day) token-ms around the boundaries: k whole tokens, a hair more or less. */
function around(window: number, cap: number, perWindow: number): number[] {
  const slack = window / perWindow < 1 ? window / perWindow * 0.001 : 0.001;
  const inSlack = perWindow * slack / 2; // less than a token by less than the slack
  const out = new Set<number>();
  for (const k of [1, 2, 3, 5, 16, 17, 64, 65, 256, 257]) {
    for (const delta of [0, 2 ** -10, 0.5, -inSlack, -3 * inSlack]) {
      const v = k * window + delta;
      if (v >= 0 && v <= cap) out.add(v);
    }
  }
  for (const v of [0, cap, cap - 0.25, cap - window + 2 ** -10]) if (v >= 0) out.add(v);
  return [...out];
}

describe('the take script\'s fast path gives the general loop\'s reply and state', { skip }, () => {
  let redis: RedisServer;
  let admin: Redis;
  shareRedis((shared) => ({ redis, admin } = shared));

  it('double for double, over runs of 1 to 256 requests from states around the boundaries', async () => {
    const now = START + 1000.25;
    const plans: Array<[number, number]> = [[60, 1000], [5, 1000], [10, 5], [7, 100], [60_000, 86_400_000], [1e9, 1e12], [1e12, 1e12]];
    const states: Array<{ limits: [number, number]; state: State }> = [];
    for (const [pm, pd] of plans) {
      const mcap = pm * MINUTE_MS;
      const dcap = pd * DAY_MS;
      const minutes = around(MINUTE_MS, mcap, pm);
      const days = around(DAY_MS, dcap, pd);
      // Each minute value with a plentiful day bucket and the reverse; then some pairs where
      // both bind; a refill since the last request; strikes; a ban over, and one in force.
      for (const m of minutes) states.push({ limits: [pm, pd], state: { m, d: dcap, at: now, k: 0, b: 0 } });
      for (const d of days) states.push({ limits: [pm, pd], state: { m: mcap, d, at: now, k: 2, b: 0 } });
      for (let i = 0; i < Math.min(minutes.length, days.length); i += 3) {
        states.push({ limits: [pm, pd], state: { m: minutes[i]!, d: days[i]!, at: now - 0.75, k: 1, b: now - 5 } });
        states.push({ limits: [pm, pd], state: { m: minutes[i]!, d: days[i]!, at: now, k: 0, b: now + 0.5 } });
      }
    }
    let fast = 0;
    let general = 0;
    let key = 0;
    for (const { limits: [pm, pd], state } of states) {
      const pipe = admin.pipeline();
      const runs: Array<{ n: number; keys: string[] }> = [];
      for (const n of [1, 2, 3, 5, 16, 64, 256]) {
        const keys = ['g', 'f', 't'].map((s) => `${s}:${key}`);
        key++;
        for (const k of keys) pipe.hset(k, { m: String(state.m), d: String(state.d), at: String(state.at), k: String(state.k), b: String(state.b) });
        const args = `${pm} ${pd} 1 300000 ${n} 0 ${now}`;
        pipe.eval(GENERAL, 1, keys[0]!, args);
        pipe.eval(TAKE_SCRIPT, 1, keys[1]!, args);
        pipe.eval(TELLING, 1, keys[2]!, args);
        for (const k of keys) pipe.hgetall(k);
        runs.push({ n, keys });
      }
      const replies = (await pipe.exec())!.map(([err, r]) => {
        assert.equal(err, null);
        return r;
      });
      // Per run: 3 HSETs, 3 EVALs, 3 HGETALLs.
      for (const [i, { n }] of runs.entries()) {
        const [g, f, t, gHash, fHash, tHash] = replies.slice(i * 9 + 3, i * 9 + 9);
        const what = `plan ${pm}/${pd}, state ${JSON.stringify(state)}, n ${n}`;
        assert.equal(f, g, `the reply, ${what}`);
        assert.deepEqual(fHash, gHash, `the stored state, ${what}`);
        assert.deepEqual(tHash, gHash, what);
        if (t === `${g as string} fast`) fast++;
        else {
          assert.equal(t, g, what);
          general++;
        }
      }
    }
    // Both sides of the boundary were crossed many times.
    assert.ok(fast > 500 && general > 500, `fast path ${fast} runs, general loop ${general}`);
  });

  it('takes the fast path exactly when the run is admitted whole without a clamp, and not banned', async () => {
    const now = START;
    const tell = async (state: State, n: number, limits: [number, number] = [60, 1000]): Promise<boolean> => {
      const k = `case:${Math.random()}`;
      await admin.hset(k, { m: String(state.m), d: String(state.d), at: String(state.at), k: String(state.k), b: String(state.b) });
      const reply = await admin.eval(TELLING, 1, k, `${limits[0]} ${limits[1]} 1 300000 ${n} 0 ${now}`) as string;
      return reply.endsWith(' fast');
    };
    const full = { m: 60 * MINUTE_MS, d: 1000 * DAY_MS, at: now, k: 0, b: 0 };
    assert.equal(await tell(full, 60), true, 'the whole minute bucket, exactly');
    assert.equal(await tell(full, 61), false, 'one request more than tokens');
    assert.equal(await tell({ ...full, m: 3 * MINUTE_MS - 0.03 }, 3), false, 'the last one admitted by the slack, clamped');
    assert.equal(await tell({ ...full, m: 3 * MINUTE_MS - 0.03 }, 2), true);
    assert.equal(await tell({ ...full, d: 2 * DAY_MS }, 3), false, 'the day bucket runs out');
    assert.equal(await tell({ ...full, d: 2 * DAY_MS }, 2), true);
    assert.equal(await tell({ ...full, b: now + 1 }, 1), false, 'a ban in force');
    assert.equal(await tell({ ...full, b: now, k: 5 }, 1), true, 'a ban that ends now');
    assert.equal(await tell({ ...full, m: 0 }, 5), false, 'a refused flood');
  });
});
