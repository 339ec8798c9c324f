// The store generation carried by the batched limiter scripts, against a real Redis: every
// reply names the token, the gate has it before any request of the pipeline is answered, a
// reset through one link reaches another link's next request, and a request answered without
// Redis leaves the token unknown until a reply to a later write names it (a late reply of an
// earlier pipeline does not).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Redis } from 'ioredis';
import { ManualClock } from '../../../src/core/clock.js';
import { StoreGeneration, type Limits, type Logger } from '../../../src/core/index.js';
import { RedisLimiter, openRedisLink, type RedisLink } from '../../../src/limits/index.js';
import { skipUnless } from '../../support/engines.js';
import { until } from '../../support/wait.js';
import type { RedisServer } from '../../support/redis.js';
import { shareRedis } from '../../support/shared-redis.js';

const FREE: Limits = { perMinute: 60, perDay: 1000 };
const BAN = { after: 20, seconds: 300 };
const KEY = 'petstore:store:generation';
const skip = skipUnless('Redis store generation tests', ['redis']);
const quiet: Logger = { log: () => undefined };

interface Side { link: RedisLink; gate: StoreGeneration; limiter: RedisLimiter }

async function side(url: string, prefix: string, opts: { commandTimeoutMs?: number; probeEveryMs?: number } = {}): Promise<Side> {
  const link = await openRedisLink(url, { logger: quiet, ...opts });
  const gate = new StoreGeneration();
  link.trackGeneration(gate, KEY);
  gate.setAdvance(() => link.advanceGeneration());
  return { link, gate, limiter: new RedisLimiter(link, { prefix, clock: new ManualClock(), ban: BAN, ownsLink: true }) };
}

/** take(), noting the gate's token at the moment the request is answered. */
async function takeSeeing(s: Side, id: string): Promise<string | undefined> {
  const r = s.limiter.take(id, FREE);
  if (!(r instanceof Promise)) return s.gate.token;
  return r.then(() => s.gate.token);
}

describe('Redis limiter: the store generation in the script replies', { skip }, () => {
  let redis: RedisServer;
  let admin: Redis;
  shareRedis((shared) => ({ redis, admin } = shared));

  it('every request of a pipeline (coalesced ones too) is answered with the token Redis holds; a missing one is made', async (t) => {
    await admin.del(KEY);
    const a = await side(redis.url, 'g1:');
    t.after(() => a.limiter.close());
    const seen = await Promise.all(Array.from({ length: 40 }, (_, i) => takeSeeing(a, `id${i % 3}`)));
    const token = await admin.get(KEY);
    assert.match(token ?? '', /^\d+:0$/);
    assert.deepEqual(new Set(seen), new Set([token]));
    // The limiter still gets its own reply shape: the headers are right.
    assert.equal((await a.limiter.take('solo', FREE)).remaining, '59');
    assert.equal(a.link.sent.scripts < 40, true, 'coalesced');
  });

  it('an advance through one process reaches the next request of another before it is answered', async (t) => {
    const a = await side(redis.url, 'g2:');
    const b = await side(redis.url, 'g2:');
    t.after(() => Promise.all([a.limiter.close(), b.limiter.close()]));
    const before = await takeSeeing(a, 'x');
    assert.equal(await takeSeeing(b, 'y'), before);
    await b.gate.advance();
    const after = await admin.get(KEY);
    assert.notEqual(after, before);
    assert.equal(b.gate.token, after, 'the advancing process knows it at once');
    assert.equal(a.gate.token, before, 'the other learns it from its next request');
    assert.equal(await takeSeeing(a, 'x'), after);
  });

  it('a Redis restarted without its scripts (NOSCRIPT): the resent scripts carry the token too', async (t) => {
    const a = await side(redis.url, 'g3:');
    t.after(() => a.limiter.close());
    await takeSeeing(a, 'x');
    await admin.script('FLUSH');
    await a.gate.advance();
    const token = await admin.get(KEY);
    const other = await side(redis.url, 'g3:');
    t.after(() => other.limiter.close());
    await admin.script('FLUSH');
    assert.deepEqual(await Promise.all([takeSeeing(other, 'p'), takeSeeing(other, 'q')]), [token, token]);
  });

  it('a request answered while Redis hangs leaves the token unknown; a late reply sent before it does not name it', async (t) => {
    const a = await side(redis.url, 'g4:', { commandTimeoutMs: 60_000 });
    t.after(() => a.limiter.close());
    const token = await takeSeeing(a, 'x');
    assert.notEqual(token, undefined);
    redis.pause();
    t.after(() => redis.resume());
    const late = takeSeeing(a, 'x');
    await until('the pipeline is sent', () => a.link.sent.pipelines === 2);
    // A request answered by a fallback meanwhile (as take() does while the link is down).
    a.link.forgetGeneration();
    redis.resume();
    assert.equal(await late, undefined, 'the reply to a write sent before that request does not name the token');
    assert.equal(await takeSeeing(a, 'x'), token, 'the next write does');
  });

  it('Redis stopped: the fallback answers with the token unknown and an advance fails; back empty: a new epoch', async (t) => {
    const a = await side(redis.url, 'g5:', { commandTimeoutMs: 200, probeEveryMs: 50 });
    t.after(() => a.limiter.close());
    const before = await takeSeeing(a, 'x');
    await redis.stop();
    assert.equal(await takeSeeing(a, 'x'), undefined);
    assert.equal(a.limiter.shared, false);
    assert.equal(await takeSeeing(a, 'x'), undefined, 'answered by the fallback at once, still unknown');
    await assert.rejects(a.gate.advance());
    assert.equal(a.gate.token, undefined);
    await redis.start();
    await until('Redis answers again', () => a.limiter.shared);
    const after = await takeSeeing(a, 'x');
    assert.match(after ?? '', /^\d+:0$/);
    assert.notEqual(after, before);
  });
});
