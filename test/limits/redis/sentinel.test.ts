// Redis Sentinel, against real servers: a master, a replica and a sentinel (quorum 1) in temp
// folders on free ports. The limiter finds the master through the sentinel; a SENTINEL failover
// under load: every request is answered (the fallback during the switch, never an error), the
// shared limits come back on the new master, and they are exact after it (a key charged before
// the failover goes on from its count; a new key gets exactly its budget).
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManualClock } from '../../../src/core/clock.js';
import type { Limits, Logger, LogLevel } from '../../../src/core/index.js';
import { openRedisLimiter, type LimitResult, type RedisLimiter } from '../../../src/limits/index.js';
import { skipUnless } from '../../support/engines.js';
import { freePort, sleep } from '../../support/free-port.js';
import { Redis } from 'ioredis';
import { rawCommand, startRedis, type RedisServer } from '../../support/redis.js';
import { until } from '../../support/wait.js';

const skip = skipUnless('Redis Sentinel tests', ['redis']);
const DAY40: Limits = { perMinute: 1000, perDay: 40 };
const LOAD: Limits = { perMinute: 1_000_000, perDay: 1_000_000_000 };
const BAN = { after: 20, seconds: 300 };

interface Line { level: LogLevel; msg: string; fields: Record<string, unknown> | undefined }
function recorder(): Logger & { lines: Line[] } {
  const lines: Line[] = [];
  return { lines, log: (level, msg, fields) => lines.push({ level, msg, fields }) };
}

/** One redis-sentinel watching `masterPort` as "mymaster", quorum 1, in a temp folder. */
async function startSentinel(masterPort: number): Promise<{ port: number; close(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-sentinel-'));
  const port = await freePort();
  const conf = join(dir, 'sentinel.conf');
  writeFileSync(conf, [
    `port ${port}`, 'bind 127.0.0.1', 'daemonize no', `dir ${dir}`, 'logfile ""',
    `sentinel monitor mymaster 127.0.0.1 ${masterPort} 1`,
    'sentinel down-after-milliseconds mymaster 2000',
    'sentinel failover-timeout mymaster 15000',
    'sentinel parallel-syncs mymaster 1', '',
  ].join('\n'));
  const child: ChildProcess = spawn('redis-sentinel', [conf], { detached: true, stdio: 'ignore' });
  child.unref();
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await until('the sentinel answers', async () => (await rawCommand(port, ['PING']).catch(() => '')) === '+PONG');
  return {
    port,
    async close() {
      if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
        // Unref'd while it serves; its exit must keep the loop alive while we wait for it.
        child.ref();
        try {
          process.kill(-child.pid, 'SIGKILL');
        } catch {
          // gone
        }
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

describe('Redis Sentinel', { skip }, () => {
  let master: RedisServer;
  let replica: RedisServer;
  let sentinel: Awaited<ReturnType<typeof startSentinel>>;
  before(async () => {
    master = await startRedis();
    replica = await startRedis({ settings: { replicaof: `127.0.0.1 ${master.port}` } });
    await until('the replica is in sync', async () => /master_link_status:up/.test(await ask(replica.port, 'INFO', 'replication')));
    sentinel = await startSentinel(master.port);
    // A failover needs the sentinel to know the replica (it learns it from the master's INFO).
    await until('the sentinel knows the replica', async () => (await ask(sentinel.port, 'SENTINEL', 'REPLICAS', 'mymaster')).includes(String(replica.port)));
  });
  after(async () => {
    await sentinel?.close();
    await replica?.close();
    await master?.close();
  });

  it('finds the master; a SENTINEL failover under load: every request answered, shared again on the new master, exact after it', async (t) => {
    const log = recorder();
    const url = `redis+sentinel://127.0.0.1:${sentinel.port}/mymaster/0`;
    const limiter = await openRedisLimiter(url, { prefix: 's:', clock: new ManualClock(), ban: BAN, logger: log, probeEveryMs: 100 });
    t.after(() => limiter.close());
    assert.equal(limiter.shared, true);
    // Charged before: 20 of 40, and on the replica too before the failover.
    for (let i = 0; i < 20; i++) assert.equal((await limiter.take('before', DAY40)).outcome, 'ok');
    await until('the replica has the key', async () => (await replica.command('EXISTS', 's:before')) === ':1');

    // Load: 8 clients, each one request after the other, until told to stop (bounded).
    let stop = false;
    let answered = 0;
    let failedTakes = 0;
    let fallback = 0;
    const clients = Array.from({ length: 8 }, async (_, c) => {
      for (let i = 0; i < 200_000 && !stop; i++) {
        try {
          const r: LimitResult = await limiter.take(`load-${c}`, LOAD);
          answered++;
          if (!limiter.shared) fallback++;
          assert.equal(r.outcome, 'ok');
        } catch {
          failedTakes++;
        }
        if (i % 50 === 0) await sleep(1);
      }
    });
    await sleep(300);
    const beforeFailover = answered;
    assert.equal(await ask(sentinel.port, 'SENTINEL', 'FAILOVER', 'mymaster'), 'OK');
    await until('the sentinel names the replica as master', async () => {
      return (await ask(sentinel.port, 'SENTINEL', 'GET-MASTER-ADDR-BY-NAME', 'mymaster')).endsWith(` ${replica.port}`);
    });
    await until('the limiter is shared again, on the new master', async () => {
      if (!limiter.shared) return false;
      await limiter.take('probe-new-master', LOAD);
      return (await replica.command('EXISTS', 's:probe-new-master')) === ':1';
    });
    await sleep(300);
    stop = true;
    await Promise.all(clients);
    assert.equal(failedTakes, 0, 'every request was answered');
    assert.ok(answered > beforeFailover, 'the load went on through the failover');

    // Exact after it: 'before' has exactly its 20 left, and a new key exactly its 40.
    let more = 0;
    for (let i = 0; i < 30; i++) if ((await limiter.take('before', DAY40)).outcome === 'ok') more++;
    assert.equal(more, 20, 'the count made before the failover holds on the new master');
    let fresh = 0;
    for (let i = 0; i < 60; i++) if ((await limiter.take('after', DAY40)).outcome === 'ok') fresh++;
    assert.equal(fresh, 40);
    assert.equal(limiter.shared, true);
    assert.equal(await replica.command('EXISTS', 's:after'), ':1', 'charged on the new master');
    t.diagnostic(`answered ${answered}, ${fallback} of them by the fallback during the switch; log: ${log.lines.map((l) => `${l.level} ${l.msg} ${JSON.stringify(l.fields)}`).join(' | ')}`);
  });
});

/** A command to the server at `port` through the driver, its reply as text. */
async function ask(port: number, ...args: string[]): Promise<string> {
  const client = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on('error', () => undefined);
  let timer: NodeJS.Timeout | undefined;
  // (A referenced timer: a connection the driver gave up on settles nothing by itself.)
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer from ${port} to ${args.join(' ')}`)), 5000);
  });
  try {
    const reply = await Promise.race([client.connect().then(() => client.call(args[0] as string, ...args.slice(1))), late]);
    return Array.isArray(reply) ? reply.flat().join(' ') : String(reply);
  } finally {
    clearTimeout(timer);
    client.disconnect();
  }
}
