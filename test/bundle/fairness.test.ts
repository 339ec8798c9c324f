// Under overload the guarantees hold. One hostile client pipelining over many connections
// must not hold another client's answers back; a banned key's flood admits nothing; a client
// that writes pipelined requests and never reads cannot make the server's memory grow without
// bound (that one in unread-flood.test.ts, which does not need to run alone). The hostile
// clients run in a worker thread (their own event loop), the victim in the test's; everything
// talks HTTP to the built bundle. Assertions are on counts and ratios with wide margins;
// latencies are printed, not asserted.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { KEYS, startBundle, tempDir, testConfig, writeConfig, type Running } from '../support/bundle.js';
import { skipUnless } from '../support/engines.js';
import { startRedis, type RedisServer } from '../support/redis.js';
import { figures, keyed, keyless, startFlood, victim, type FloodCounts } from '../support/flood.js';
import { portOf, sleep } from '../support/wire.js';

const BANNED = 'banned-key-0123';
const CONFIG = testConfig({
  keys: [
    ...(testConfig().keys as unknown[]),
    { key: BANNED, plan: 'free', name: 'banned', limits: { perMinute: 3, perDay: 1000 } },
  ],
  // The keyless budget is small, as in production: the flood gets 401s, then 429s.
  anonymous: { perMinute: 30, perDay: 1000 },
  ban: { after: 3, seconds: 600 },
});

/** Gets BANNED banned: its minute budget spent, then refused until the ban starts. */
async function ban(url: string): Promise<void> {
  for (let i = 0; i < 20; i++) {
    const res = await fetch(`${url}/pets`, { headers: { authorization: `Bearer ${BANNED}` } });
    const body = await res.json() as { code?: string };
    if (body.code === 'temporarily_banned') return;
  }
  assert.fail('the key was not banned after 20 requests');
}

/** A flood of BANNED's pipelined GETs over 50 connections for `ms`: what it got. */
async function bannedFlood(url: string, ms: number): Promise<FloodCounts> {
  const flood = startFlood({ port: portOf(url), connections: 50, request: keyed(BANNED), depth: 50, read: true });
  await sleep(ms);
  return flood.stop();
}

describe('in-process limits', () => {
  let srv: Running;
  before(async () => {
    const dir = tempDir();
    srv = await startBundle(['--config', writeConfig(dir, CONFIG), '--memory'], { cwd: dir });
  });
  after(async () => {
    assert.equal(await srv.stop(), 0, srv.stderr());
  });

  it('a keyless client pipelining on 200 connections does not hold a victim\'s answers back', async (t) => {
    const alone = await victim(srv.url, 3_000);
    t.diagnostic(`victim alone: ${figures(alone)}`);
    const flood = startFlood({ port: portOf(srv.url), connections: 200, request: keyless(), depth: 100, read: true });
    try {
      await sleep(1_000);
      const before = (await flood.counts()).answers;
      const flooded = await victim(srv.url, 3_000);
      const counts = await flood.counts();
      t.diagnostic(`victim under the flood: ${figures(flooded)}; the flood got ${counts.answers - before} answers meanwhile (${JSON.stringify(counts.statuses)})`);
      // The flood is a flood: thousands of refusals in the window (else this proves nothing).
      assert.ok(counts.answers - before > 1_000, `the flood got only ${counts.answers - before} answers`);
      assert.equal((counts.statuses['200'] ?? 0), 0, 'keyless requests are never admitted');
      // As shares of what the victim sent: the flood's worker shares the test's process, and
      // on a busy machine the victim sends fewer requests in the window, answered or not.
      assert.ok(flooded.answered / flooded.sent >= 0.8 * alone.answered / alone.sent, `victim: ${flooded.answered}/${flooded.sent} answered under the flood, ${alone.answered}/${alone.sent} alone`);
    } finally {
      await flood.stop();
    }
  });

  it('a banned key pipelining over 50 connections gets nothing admitted', async (t) => {
    await ban(srv.url);
    const counts = await bannedFlood(srv.url, 3_000);
    t.diagnostic(`banned key flood: ${counts.answers} answers ${JSON.stringify(counts.statuses)}`);
    assert.ok(counts.answers > 1_000, `the flood got only ${counts.answers} answers`);
    assert.equal(counts.statuses['200'] ?? 0, 0);
  });
});

describe('limits in Redis', { skip: skipUnless('Redis limits under overload', ['redis']) }, () => {
  let redis: RedisServer;
  let srv: Running;
  before(async () => {
    redis = await startRedis();
    const dir = tempDir();
    srv = await startBundle(['--config', writeConfig(dir, CONFIG), '--memory', '--limits', redis.url], { cwd: dir });
  });
  after(async () => {
    assert.equal(await srv.stop(), 0, srv.stderr());
    await redis.close();
  });

  it('a keyless client pipelining on 200 connections does not hold a victim\'s answers back', async (t) => {
    const alone = await victim(srv.url, 3_000);
    t.diagnostic(`victim alone: ${figures(alone)}`);
    const flood = startFlood({ port: portOf(srv.url), connections: 200, request: keyless(), depth: 100, read: true });
    try {
      await sleep(1_000);
      const before = (await flood.counts()).answers;
      const flooded = await victim(srv.url, 3_000);
      const counts = await flood.counts();
      t.diagnostic(`victim under the flood: ${figures(flooded)}; the flood got ${counts.answers - before} answers meanwhile (${JSON.stringify(counts.statuses)})`);
      assert.ok(counts.answers - before > 1_000, `the flood got only ${counts.answers - before} answers`);
      assert.equal((counts.statuses['200'] ?? 0), 0, 'keyless requests are never admitted');
      // As shares of what the victim sent: the flood's worker shares the test's process, and
      // on a busy machine the victim sends fewer requests in the window, answered or not.
      assert.ok(flooded.answered / flooded.sent >= 0.8 * alone.answered / alone.sent, `victim: ${flooded.answered}/${flooded.sent} answered under the flood, ${alone.answered}/${alone.sent} alone`);
    } finally {
      await flood.stop();
    }
  });

  it('a banned key pipelining over 50 connections gets nothing admitted', async (t) => {
    await ban(srv.url);
    const counts = await bannedFlood(srv.url, 3_000);
    t.diagnostic(`banned key flood: ${counts.answers} answers ${JSON.stringify(counts.statuses)}`);
    assert.ok(counts.answers > 1_000, `the flood got only ${counts.answers} answers`);
    assert.equal(counts.statuses['200'] ?? 0, 0);
  });
});
