// Limits in Redis, from the outside: bundle processes started with --limits on one real Redis
// charge the same buckets; a restarted process still refuses a spent key; Redis stopped, they
// answer from their own limiter with one error line, and share again once it is back; one
// Redis command per request; the start errors (driver missing, scripts forbidden, bad URL).
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { BUNDLE, KEYS, call, runBundle, startBundle, tempDir, testConfig, writeConfig, type Running } from '../support/bundle.js';
import { skipUnless } from '../support/engines.js';
import { sleep } from '../support/free-port.js';
import { startRedis, type RedisServer } from '../support/redis.js';
import { until } from '../support/wait.js';

const skip = skipUnless('Redis limits black-box tests', ['redis']);
const DAY40 = 'day40-key';
const DAY40B = 'day40-key-b';
const CONFIG = testConfig({
  keys: [
    ...(testConfig().keys as unknown[]),
    { key: DAY40, plan: 'enterprise', name: 'day40', limits: { perMinute: 1000, perDay: 40 } },
    { key: DAY40B, plan: 'enterprise', name: 'day40b', limits: { perMinute: 1000, perDay: 40 } },
    { key: 'rt-key', plan: 'enterprise', name: 'rt', limits: { perMinute: 1000, perDay: 1000 } },
  ],
});

/** JSON log lines of a process's stdout (the first line is the ready line). */
function logLines(p: Running): Array<Record<string, unknown>> {
  return p.stdout().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);
}

describe('two processes on one Redis', { skip }, () => {
  let redis: RedisServer;
  let admin: Redis;
  let dir: string;
  let a: Running;
  let b: Running;
  const start = (extra: string[] = []): Promise<Running> =>
    startBundle(['--config', join(dir, 'petstore.config.json'), '--memory', '--limits', redis.url, '--log-level', 'info', ...extra], { cwd: dir });

  before(async () => {
    redis = await startRedis();
    admin = new Redis(redis.url, { retryStrategy: () => 50 });
    admin.on('error', () => undefined);
    dir = tempDir();
    writeConfig(dir, CONFIG);
    [a, b] = await Promise.all([start(), start()]);
  });
  after(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    admin.disconnect();
    await redis.close();
  });

  it('logs the limits backend at start, without a password', async () => {
    // Lines logged while starting follow the ready line, maybe in a later chunk.
    await until('the start log line', () => logLines(a).some((l) => l.msg === 'limits in Redis'));
    const line = logLines(a).find((l) => l.msg === 'limits in Redis');
    assert.equal(line?.redis, redis.url);
    assert.equal(line?.up, true);
  });

  it('a key with a day budget of 40 gets exactly 40 across both, Remaining counting down across processes', async () => {
    const remaining: string[] = [];
    let admitted = 0;
    for (let i = 0; i < 60; i++) {
      const res = await call(`${(i % 2 === 0 ? a : b).url}/pets`, { key: DAY40 });
      if (res.status === 200) {
        admitted++;
        remaining.push(res.headers.get('x-ratelimit-remaining') ?? '');
        assert.equal(res.headers.get('x-ratelimit-limit'), '40');
      } else {
        assert.equal(res.status, 429, res.text);
        assert.match((res.json as { code: string }).code, /^(rate_limited|temporarily_banned)$/);
        assert.equal(res.headers.get('x-ratelimit-remaining'), '0');
      }
    }
    assert.equal(admitted, 40);
    assert.deepEqual(remaining, Array.from({ length: 40 }, (_, i) => String(39 - i)));
  });

  it('concurrent requests spread over both: exactly 40 admitted', async () => {
    const results = await Promise.all(Array.from({ length: 80 }, (_, i) => call(`${(i % 2 === 0 ? a : b).url}/pets`, { key: DAY40B })));
    assert.equal(results.filter((r) => r.status === 200).length, 40);
    assert.equal(results.filter((r) => r.status === 429).length, 40);
    const seen = results.filter((r) => r.status === 200).map((r) => Number(r.headers.get('x-ratelimit-remaining'))).sort((x, y) => x - y);
    assert.deepEqual(seen, Array.from({ length: 40 }, (_, i) => i), 'each remaining value once');
  });

  it('a restarted process still refuses the spent key', async () => {
    await b.stop();
    b = await start();
    const res = await call(`${b.url}/pets`, { key: DAY40 });
    assert.equal(res.status, 429, res.text);
  });

  it('one Redis round trip per request (INFO commandstats: one EVALSHA), keyless requests too', async () => {
    await admin.config('RESETSTAT');
    const n = 20;
    for (let i = 0; i < n; i++) {
      const res = await call(`${(i % 2 === 0 ? a : b).url}/pets`, i % 4 === 3 ? {} : { key: 'rt-key' });
      assert.ok(res.status === 200 || res.status === 401, res.text);
    }
    const stats = (await admin.info('commandstats')).split('\n').filter((l) => l.startsWith('cmdstat_'));
    const calls = Object.fromEntries(stats.map((l) => [l.slice(8, l.indexOf(':')), Number(/calls=(\d+)/.exec(l)?.[1])]));
    delete calls.info;
    delete calls['config|resetstat'];
    // One command from the process per request (EVALSHA); the other four ran inside the script,
    // in the server, once per request each: no round trip of their own.
    assert.deepEqual(calls, { evalsha: n, time: n, hmget: n, hset: n, pexpire: n }, stats.join('\n'));
  });

  it('Redis stopped: requests still answered, each process from what Redis last said, one error line each; back: shared limits again', async () => {
    const known = 'free-key-0123';
    // Redis's word before the outage: 57 left for the free key, and this address's budget used.
    for (let i = 0; i < 3; i++) assert.equal((await call(`${(i % 2 === 0 ? a : b).url}/pets`, { key: known })).status, 200);
    for (const p of [a, b]) assert.equal((await call(`${p.url}/pets`)).status, 401);
    await redis.stop();
    for (let i = 0; i < 10; i++) {
      const res = await call(`${(i % 2 === 0 ? a : b).url}/pets`, { key: known });
      assert.equal(res.status, 200, res.text);
      assert.ok(Number(res.headers.get('x-ratelimit-remaining')) <= 57, 'no fresh budget at the switch');
    }
    // A key this process never heard of starts as a new key would (limitsOutage "open", the default).
    const unseen = await call(`${a.url}/pets`, { key: KEYS.pro });
    assert.equal(unseen.status, 200, unseen.text);
    assert.equal(unseen.headers.get('x-ratelimit-remaining'), '299');
    // The keyless budget too: an address Redis knew goes on from where it was.
    assert.equal((await call(`${a.url}/pets`)).status, 401);
    for (const p of [a, b]) await until('the error line', () => logLines(p).some((l) => l.level === 50));
    await sleep(200); // a second line, if one were logged, would have arrived
    for (const p of [a, b]) {
      const errors = logLines(p).filter((l) => l.level === 50);
      assert.equal(errors.length, 1, p.stdout());
      assert.match(String(errors[0]?.msg), /Redis does not answer/);
    }
    await redis.start();
    for (const p of [a, b]) await until('Redis answers again', () => logLines(p).some((l) => /answers again/.test(String(l.msg))));
    // Redis came back empty (no persistence here): the free key starts full, shared by both.
    const r1 = await call(`${a.url}/pets`, { key: known });
    const r2 = await call(`${b.url}/pets`, { key: known });
    assert.equal(r1.headers.get('x-ratelimit-remaining'), '59');
    assert.equal(r2.headers.get('x-ratelimit-remaining'), '58');
  });
});

describe('start errors and the command line', { skip }, () => {
  let redis: RedisServer;
  before(async () => {
    redis = await startRedis();
  });
  after(() => redis.close());

  it('without the driver installed: one line naming npm install ioredis, exit 1', async () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'dist'));
    copyFileSync(BUNDLE, join(dir, 'dist', 'petstore.js'));
    // The copy has no node_modules above it, as when only the bundle is installed.
    const copy = spawnSync(process.execPath, [join(dir, 'dist', 'petstore.js'), '--memory', '--port', '0', '--limits', redis.url], { cwd: dir, encoding: 'utf8', timeout: 20_000 });
    assert.equal(copy.status, 1, copy.stderr);
    const lines = copy.stderr.trim().split('\n').filter((l) => !l.includes('built-in demo config'));
    assert.deepEqual(lines, ['petstore: the limits URL needs the Redis driver ioredis, which is not installed: run `npm install ioredis`']);
    assert.equal(copy.stdout, '');
  });

  it('a Redis that forbids EVAL/EVALSHA: a clear start error, exit 1, nothing listening', async (t) => {
    const locked = await startRedis({ t });
    await locked.command('ACL', 'SETUSER', 'default', '-eval', '-evalsha');
    const res = await runBundle(['--memory', '--port', '0', '--limits', locked.url]);
    assert.equal(res.code, 1, res.stderr);
    assert.match(res.stderr, /petstore: Redis at redis:\/\/127\.0\.0\.1:\d+\/0 refuses the limiter's script \(NOPERM[^\n]*EVAL and EVALSHA/);
    assert.equal(res.stdout, '');
  });

  it('a Redis that refuses the credentials, or lacks the database: exit 1 naming the limits URL, never per-process limits for good', async (t) => {
    const locked = await startRedis({ t });
    await locked.command('CONFIG', 'SET', 'requirepass', 'right-pass');
    const at = `127.0.0.1:${locked.port}`;
    const cases: Array<[string, RegExp]> = [
      [`redis://${at}/0`, /^petstore: the limits URL redis:\/\/127\.0\.0\.1:\d+\/0: Redis wants a password, and the URL gives none/m],
      [`redis://:wrong-pass@${at}/0`, /^petstore: the limits URL redis:\/\/127\.0\.0\.1:\d+\/0: Redis refuses the credentials \(WRONGPASS/m],
      [`redis://nobody:right-pass@${at}/0`, /^petstore: the limits URL [^ ]+: Redis refuses the credentials \(WRONGPASS/m],
      [`redis://:right-pass@${at}/99`, /^petstore: the limits URL redis:\/\/127\.0\.0\.1:\d+\/99: Redis has no database 99 \(it has 16: 0 and up/m],
    ];
    for (const [url, why] of cases) {
      const res = await runBundle(['--memory', '--port', '0', '--limits', url]);
      assert.equal(res.code, 1, `${url}: ${res.stderr}`);
      assert.match(res.stderr, why, url);
      assert.equal(/right-pass|wrong-pass/.test(res.stderr), false, 'no password in the message');
    }
    // The right password and an existing database start.
    const dir = tempDir();
    const ok = await startBundle(['--config', writeConfig(dir, CONFIG), '--memory', '--limits', `redis://:right-pass@${at}/15`], { cwd: dir });
    try {
      assert.equal((await call(`${ok.url}/pets`, { key: KEYS.free })).status, 200);
      assert.match(await locked.command('AUTH', 'right-pass'), /^\+OK/);
    } finally {
      await ok.stop();
    }
  });

  it('an IPv6 literal host works: redis://[::1]:port/0', async (t) => {
    const v6 = await startRedis({ t, settings: { bind: '127.0.0.1 ::1' } });
    const dir = tempDir();
    const p = await startBundle(['--config', writeConfig(dir, CONFIG), '--memory', '--limits', `redis://[::1]:${v6.port}/0`], { cwd: dir });
    try {
      const first = Number((await call(`${p.url}/pets`, { key: KEYS.free })).headers.get('x-ratelimit-remaining'));
      const second = Number((await call(`${p.url}/pets`, { key: KEYS.free })).headers.get('x-ratelimit-remaining'));
      assert.equal(second, first - 1, 'kept in that Redis');
      // The key's own entry (the start's probe key expires at once, but Redis may still count it
      // in DBSIZE until its expiry cycle runs, so it is not counted here).
      assert.equal(await v6.command('KEYS', 'petstore:limits:key:*'), '*1');
    } finally {
      await p.stop();
    }
  });

  it('a bad --limits or PETSTORE_LIMITS is a usage error (exit 2) that says why', async () => {
    const encoded = await runBundle(['--memory', '--limits', 'redis://:50%zz@127.0.0.1:6379/0']);
    assert.equal(encoded.code, 2);
    assert.match(encoded.stderr, /petstore: --limits: the password in the URL has a bad percent-encoding/);
    assert.equal(encoded.stderr.includes('URI malformed'), false);
    const flag = await runBundle(['--memory', '--limits', 'http://127.0.0.1:6379']);
    assert.equal(flag.code, 2);
    assert.match(flag.stderr, /petstore: --limits must be a redis:\/\/ or rediss:\/\/ URL/);
    const env = await runBundle(['--memory'], { env: { PETSTORE_LIMITS: 'localhost:6379' } });
    assert.equal(env.code, 2);
    assert.match(env.stderr, /petstore: PETSTORE_LIMITS must be/);
  });

  it('precedence --limits > PETSTORE_LIMITS > config "limits"; the password never logged', async () => {
    const dir = tempDir();
    const secret = `redis://:secretpw@127.0.0.1:${redis.port}/0`;
    const unused = 'redis://127.0.0.1:1/5';
    writeConfig(dir, testConfig({ limits: unused }));
    const backend = async (args: string[], env: NodeJS.ProcessEnv = {}): Promise<unknown> => {
      const p = await startBundle(['--config', join(dir, 'petstore.config.json'), '--memory', '--log-level', 'info', ...args], { cwd: dir, env });
      await until('the start log line', () => logLines(p).some((l) => l.msg === 'limits in Redis'));
      await p.stop();
      assert.equal(p.stdout().includes('secretpw') || p.stderr().includes('secretpw'), false, 'no password in the output');
      return logLines(p).find((l) => l.msg === 'limits in Redis')?.redis;
    };
    assert.equal(await backend([]), 'redis://127.0.0.1:1/5');
    assert.equal(await backend([], { PETSTORE_LIMITS: secret }), redis.url);
    assert.equal(await backend(['--limits', `redis://127.0.0.1:${redis.port}/3`], { PETSTORE_LIMITS: secret }), `redis://127.0.0.1:${redis.port}/3`);
  });
});
