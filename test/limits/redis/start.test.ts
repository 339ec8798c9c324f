// Redis set-ups that cannot work stop the start with the real reason, against real servers: a
// TLS port whose CA is not trusted, redis:// to a TLS port and rediss:// to a plain one, an ACL
// user lacking a command the script runs or its keys, a wrong password, a replica, a cluster.
// What works: rediss:// with the CA given in the URL (and a client certificate), and the ACL
// the docs give (every limiter operation: charge, reset, the store generation).
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManualClock } from '../../../src/core/clock.js';
import type { Limits, Logger, LogLevel } from '../../../src/core/index.js';
import { RedisStartError, openRedisLimiter, openRedisLink } from '../../../src/limits/index.js';
import { skipUnless } from '../../support/engines.js';
import { freePort } from '../../support/free-port.js';
import { startRedis, type RedisServer } from '../../support/redis.js';

const FREE: Limits = { perMinute: 60, perDay: 1000 };
const BAN = { after: 20, seconds: 300 };
const skip = skipUnless('Redis start check tests', ['redis']);

interface Line { level: LogLevel; msg: string; fields: Record<string, unknown> | undefined }
function recorder(): Logger & { lines: Line[] } {
  const lines: Line[] = [];
  return { lines, log: (level, msg, fields) => lines.push({ level, msg, fields }) };
}

/** The ACL the docs give (docs/scaling.md, "Redis ACL"), as ACL SETUSER arguments. */
const DOCUMENTED_ACL = ['on', '>s3cret', 'resetkeys', '~petstore:*', 'resetchannels', '-@all',
  '+eval', '+evalsha', '+time', '+hmget', '+hset', '+pexpire', '+get', '+set', '+scan', '+unlink', '+select', '+ping', '+info', '+role'];

/** A CA, a server certificate for 127.0.0.1 and a client certificate, made with openssl. */
function makeCertificates(): { dir: string; ca: string; otherCa: string } {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-tls-'));
  const openssl = (...args: string[]): void => {
    const r = spawnSync('openssl', args, { cwd: dir, encoding: 'utf8' });
    assert.equal(r.status, 0, `openssl ${args.join(' ')}: ${r.stderr}`);
  };
  writeFileSync(join(dir, 'san.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  for (const ca of ['ca', 'other-ca']) openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${ca}.key`, '-out', `${ca}.crt`, '-days', '2', '-subj', `/CN=petstore test ${ca}`);
  for (const [name, ext] of [['server', ['-extfile', 'san.ext']], ['client', []]] as const) {
    openssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`);
    openssl('x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', `${name}.crt`, '-days', '2', ...ext);
  }
  return { dir, ca: join(dir, 'ca.crt'), otherCa: join(dir, 'other-ca.crt') };
}

const refusedWith = (re: RegExp) => (err: unknown): boolean => {
  assert.ok(err instanceof RedisStartError, String(err));
  assert.match(err.message, re);
  assert.doesNotMatch(err.message, /s3cret|Connection is closed/);
  return true;
};

describe('Redis over TLS', { skip }, () => {
  let certs: ReturnType<typeof makeCertificates>;
  let redis: RedisServer;
  let tlsPort: number;
  let mutual: RedisServer;
  let mutualPort: number;
  before(async () => {
    certs = makeCertificates();
    const settings = (port: number, clients: string): Record<string, string> => ({
      'tls-port': String(port), 'tls-cert-file': join(certs.dir, 'server.crt'), 'tls-key-file': join(certs.dir, 'server.key'),
      'tls-ca-cert-file': certs.ca, 'tls-auth-clients': clients,
    });
    tlsPort = await freePort();
    redis = await startRedis({ settings: settings(tlsPort, 'no') });
    mutualPort = await freePort();
    mutual = await startRedis({ settings: settings(mutualPort, 'yes') });
  });
  after(async () => {
    await redis?.close();
    await mutual?.close();
  });

  it('rediss:// with the CA in the URL works', async (t) => {
    const limiter = await openRedisLimiter(`rediss://127.0.0.1:${tlsPort}/0?ca=${certs.ca}`, { prefix: 'tls:', clock: new ManualClock(), ban: BAN, logger: recorder(), commandTimeoutMs: 10_000 });
    t.after(() => limiter.close());
    assert.equal(limiter.shared, true);
    assert.equal((await limiter.take('k', FREE)).remaining, '59');
    assert.equal(await redis.command('EXISTS', 'tls:k'), ':1');
  });

  it('an untrusted CA stops the start with the TLS error', async () => {
    for (const url of [`rediss://127.0.0.1:${tlsPort}/0`, `rediss://127.0.0.1:${tlsPort}/0?ca=${certs.otherCa}`]) {
      await assert.rejects(openRedisLink(url, { logger: recorder() }), refusedWith(/TLS with Redis fails: self-signed certificate in certificate chain.*\?ca=/));
    }
  });

  it('redis:// to the TLS port, and rediss:// to the plain port, say which protocol the port speaks', async () => {
    await assert.rejects(openRedisLink(`redis://127.0.0.1:${tlsPort}/0`, { logger: recorder(), connectTimeoutMs: 1000 }), refusedWith(/speaks TLS on this port.*use rediss:\/\//));
    await assert.rejects(openRedisLink(`rediss://127.0.0.1:${redis.port}/0?ca=${certs.ca}`, { logger: recorder(), connectTimeoutMs: 1000 }),
      refusedWith(/does not speak TLS.*use redis:\/\//));
  });

  it('a CA file that cannot be read stops the start naming it', async () => {
    await assert.rejects(openRedisLink(`rediss://127.0.0.1:${tlsPort}/0?ca=/nonexistent/ca.crt`, { logger: recorder() }), refusedWith(/cannot read its ca file \/nonexistent\/ca.crt.*ENOENT/));
  });

  it('a server that wants client certificates: never shared without one, works with cert and key in the URL', async (t) => {
    // Without one the server ends the handshake: a TLS alert (the start stops, naming it) or,
    // depending on timing, a reset read as a Redis that does not answer (the start goes on
    // in fallback). Never shared limits.
    const without = await openRedisLink(`rediss://127.0.0.1:${mutualPort}/0?ca=${certs.ca}`, { logger: recorder(), connectTimeoutMs: 1000 }).catch((err: unknown) => {
      assert.ok(err instanceof RedisStartError, String(err));
      assert.match(err.message, /TLS/);
      return undefined;
    });
    if (without !== undefined) {
      assert.equal(without.up, false);
      await without.close();
    }
    const url = `rediss://127.0.0.1:${mutualPort}/0?ca=${certs.ca}&cert=${join(certs.dir, 'client.crt')}&key=${join(certs.dir, 'client.key')}`;
    const limiter = await openRedisLimiter(url, { prefix: 'mtls:', clock: new ManualClock(), ban: BAN, logger: recorder(), commandTimeoutMs: 10_000 });
    t.after(() => limiter.close());
    assert.equal((await limiter.take('k', FREE)).remaining, '59');
  });
});

describe('Redis ACL users and other set-ups', { skip }, () => {
  let redis: RedisServer;
  before(async () => {
    redis = await startRedis();
    await redis.command('ACL', 'SETUSER', 'scripts-only', 'on', '>s3cret', '~*', '-@all', '+eval', '+evalsha');
    await redis.command('ACL', 'SETUSER', 'other-keys', 'on', '>s3cret', 'resetkeys', '~other:*', '-@all', '+@all');
    await redis.command('ACL', 'SETUSER', 'petstore', ...DOCUMENTED_ACL);
  });
  after(() => redis?.close());

  const url = (user: string, password = 's3cret'): string => `redis://${user}:${password}@127.0.0.1:${redis.port}/0`;

  it('a user allowed only EVAL and EVALSHA: the start stops with Redis\'s refusal of the command inside the script', async () => {
    await assert.rejects(openRedisLink(url('scripts-only'), { logger: recorder() }),
      refusedWith(/Redis at redis:\/\/127.0.0.1:\d+\/0 refuses the limiter's script \(ERR The user executing the script can't run this command.*\).*TIME, HMGET, HSET, PEXPIRE/));
  });

  it('a user whose key patterns leave out petstore:*: the start stops with NOPERM', async () => {
    await assert.rejects(openRedisLink(url('other-keys'), { logger: recorder() }), refusedWith(/refuses the limiter's script \(NOPERM.*keys/));
  });

  it('a wrong password stops the start', async () => {
    await assert.rejects(openRedisLink(url('petstore', 'wrong'), { logger: recorder() }), (err: unknown) => {
      assert.ok(err instanceof RedisStartError);
      assert.match(err.message, /refuses the credentials \(WRONGPASS/);
      assert.doesNotMatch(err.message, /wrong/);
      return true;
    });
  });

  it('the documented ACL works: charge, the store generation, reset', async (t) => {
    const link = await openRedisLink(url('petstore'), { logger: recorder(), generationKey: 'petstore:store:generation' });
    const { RedisLimiter } = await import('../../../src/limits/index.js');
    const limiter = new RedisLimiter(link, { prefix: 'petstore:limits:key:', clock: new ManualClock(), ban: BAN, ownsLink: true });
    t.after(() => limiter.close());
    assert.equal((await limiter.take('k', FREE)).remaining, '59');
    assert.equal(limiter.shared, true);
    await limiter.reset();
    assert.equal(await redis.command('EXISTS', 'petstore:limits:key:k'), ':0');
    assert.equal((await limiter.take('k', FREE)).remaining, '59');
    assert.equal(limiter.shared, true, 'no command was refused');
  });

  it('a replica stops the start (READONLY)', async (t) => {
    const replica = await startRedis({ t, settings: { replicaof: `127.0.0.1 ${redis.port}`, masterauth: 'unused' } });
    const opened = openRedisLink(replica.url, { logger: recorder() });
    t.after(async () => (await opened.catch(() => undefined))?.close());
    await assert.rejects(opened, refusedWith(/read-only replica \(READONLY.*master.*redis\+sentinel/));
  });

  it('a Redis Cluster node stops the start', async (t) => {
    const node = await startRedis({ t, settings: { 'cluster-enabled': 'yes', 'cluster-config-file': 'nodes.conf' } });
    await assert.rejects(openRedisLink(node.url, { logger: recorder() }), refusedWith(/is a Redis Cluster, which the limits do not support/));
  });

  it('a Redis that does not answer at start: the start goes on, the error line gives the driver\'s reason', async (t) => {
    const gone = await startRedis({ t });
    await gone.stop();
    const log = recorder();
    const link = await openRedisLink(gone.url, { logger: log });
    t.after(() => link.close());
    assert.equal(link.up, false);
    assert.equal(log.lines.length, 1);
    assert.match(String(log.lines[0]?.fields?.error), /ECONNREFUSED/);
  });
});
