// A client that writes pipelined requests over 200 connections and never reads the answers
// cannot make the server's memory grow without bound, nor leave anything behind: in process and
// with the limits in Redis. (Split from fairness.test.ts: what it measures, the live heap, does
// not depend on the machine's load, so it runs side by side with other files.)
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { KEYS, startBundle, tempDir, testConfig, until, writeConfig, type Running } from '../support/bundle.js';
import { skipUnless } from '../support/engines.js';
import { startRedis, type RedisServer } from '../support/redis.js';
import { liveHeap, liveHeapEnv, liveMiB, type LiveHeap } from '../support/live-heap.js';
import { figures, keyed, startFlood, victim } from '../support/flood.js';
import { portOf, rssKiB, sleep } from '../support/wire.js';

// As fairness.test.ts: the flood's key is soon refused, then banned (cheap answers, as a real
// flood of a key would get).
const CONFIG = testConfig({ anonymous: { perMinute: 30, perDay: 1000 }, ban: { after: 3, seconds: 600 } });

/**
 * A write-without-read flood over 200 connections for `ms`: peak RSS (diagnostics only), and
 * what the server holds live (after forced full collections) before, while the flood still
 * runs, and once its connections are gone.
 */
async function unreadFlood(srv: Running, request: string, ms: number): Promise<{ peakMiB: number; baseMiB: number; base: LiveHeap; during: LiveHeap }> {
  const pid = srv.proc.pid as number;
  const base = await liveHeap(srv);
  const baseMiB = rssKiB(pid) / 1024;
  const flood = startFlood({ port: portOf(srv.url), connections: 200, request, depth: 0, read: false });
  try {
    let peakMiB = baseMiB;
    const end = Date.now() + ms;
    while (Date.now() < end) {
      peakMiB = Math.max(peakMiB, rssKiB(pid) / 1024);
      await sleep(50);
    }
    const during = await liveHeap(srv);
    return { peakMiB, baseMiB, base, during };
  } finally {
    await flood.stop();
  }
}

/**
 * The server of this check runs with V8's old space capped at this, so that a server that
 * went on reading connections whose answers nobody reads (and so held every request they
 * sent) dies of it, and the check fails on its exit, instead of taking the machine's memory.
 * A bounded server holds some 20 to 40 MiB live under this flood; on a busy machine, where it
 * falls behind, up to about 1 MiB per connection (one read of up to 64 KiB parsed into requests
 * at once, before the bounds of turns.ts see them): 250 MiB was seen with 200 connections.
 */
const OLD_SPACE_MIB = 512;
/** What may stay live once the flood's connections are gone, over what was live before it. */
const LEFT_LIVE_MIB = 8;

/**
 * Starts a server for the memory check, floods it, checks that it survived, answers others,
 * and holds no more than before, and stops it. Memory is read as what stays live after forced
 * full collections: a peak of RSS (checked here before) measured when V8 chose to collect,
 * which differs between Node releases (Node 24's V8 took a bounded server past 250 MiB).
 */
async function memoryCheck(t: { diagnostic(m: string): void }, args: readonly string[]): Promise<void> {
  const dir = tempDir();
  const srv = await startBundle(['--config', writeConfig(dir, CONFIG), '--memory', ...args], {
    cwd: dir, env: liveHeapEnv(`--max-old-space-size=${OLD_SPACE_MIB}`),
  });
  try {
    const { peakMiB, baseMiB, base, during } = await unreadFlood(srv, keyed(KEYS.free), 4_000);
    // It survived, and answers again once the flood's connections are gone: first a request
    // of its own (how soon depends on the machine's load: the server first drops what the
    // closed connections had sent and waits for the limiter's answers to what it had
    // admitted), then others.
    const stopped = performance.now();
    await until('the server answers after the flood', async () => (await fetch(`${srv.url}/pets?limit=1`, { headers: { authorization: `Bearer ${KEYS.enterprise}` } })).status === 200);
    const firstMs = performance.now() - stopped;
    const after = await victim(srv.url, 3_000);
    const left = await liveHeap(srv);
    t.diagnostic(`live heap ${liveMiB(base)} MiB before, ${liveMiB(during)} MiB under the flood, ${liveMiB(left)} MiB after it; RSS ${baseMiB.toFixed(0)} MiB before, peak ${peakMiB.toFixed(0)} MiB; first answer ${firstMs.toFixed(0)} ms after the flood; victim after it: ${figures(after)}`);
    assert.ok(after.answered >= 0.6 * after.sent, figures(after));
    assert.ok(liveMiB(left) - liveMiB(base) < LEFT_LIVE_MIB, `live heap ${liveMiB(base)} MiB before the flood, ${liveMiB(left)} MiB once it is gone`);
  } finally {
    assert.equal(await srv.stop(), 0, srv.stderr());
  }
}

const TITLE = '200 connections writing pipelined requests without reading: the server survives a capped heap, answers, and keeps nothing';

describe('in-process limits', () => {
  it(TITLE, async (t) => {
    await memoryCheck(t, []);
  });
});

describe('limits in Redis', { skip: skipUnless('Redis limits under overload', ['redis']) }, () => {
  let redis: RedisServer;
  before(async () => {
    redis = await startRedis();
  });
  after(async () => {
    await redis.close();
  });

  it(TITLE, async (t) => {
    await memoryCheck(t, ['--limits', redis.url]);
  });
});
