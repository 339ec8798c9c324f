// TLS to PostgreSQL with a private CA, as libpq's URL options say it: a real server with
// ssl=on and a certificate from a CA made here by openssl (for localhost and 127.0.0.1).
// verify-full with sslrootcert connects (and the connection is encrypted); without the CA it
// is refused saying how to trust it; a certificate for another name fails verify-full but not
// verify-ca; require encrypts without verifying; a client certificate logs in a user whose
// only way in is that certificate; an unreadable CA file is named.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, copyFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '../../../src/core/index.js';
import type { LogLevel, Logger } from '../../../src/core/types.js';
import { openPostgresStore, StoreOpenError } from '../../../src/store/index.js';
import { isRoot, lookupUser, removeDir } from '../../support/engines.js';
import { until } from '../../support/wait.js';
import { skipUnless } from '../../support/engines.js';
import { startPostgres, type PostgresServer } from '../../support/postgres.js';

const skip = skipUnless('PostgreSQL TLS tests', ['postgres']);

function openssl(args: readonly string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

/** A CA, a server certificate signed by it for `names`, a client certificate for `client`. */
function makeCerts(dir: string): void {
  const ext = (file: string, text: string): void => writeFileSync(join(dir, file), text);
  openssl(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=petstore test CA', '-keyout', 'ca.key', '-out', 'ca.crt'], dir);
  // A second CA, trusted by nobody.
  openssl(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=another CA', '-keyout', 'other-ca.key', '-out', 'other-ca.crt'], dir);
  const sign = (name: string, subject: string, extFile: string): void => {
    openssl(['req', '-newkey', 'rsa:2048', '-nodes', '-subj', subject, '-keyout', `${name}.key`, '-out', `${name}.csr`], dir);
    openssl(['x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '2', '-extfile', extFile, '-out', `${name}.crt`], dir);
  };
  ext('server.ext', 'subjectAltName = DNS:localhost, IP:127.0.0.1\n');
  ext('elsewhere.ext', 'subjectAltName = DNS:db.example.test\n');
  ext('client.ext', 'extendedKeyUsage = clientAuth\n');
  sign('server', '/CN=localhost', 'server.ext');
  sign('elsewhere', '/CN=db.example.test', 'elsewhere.ext');
  sign('client', '/CN=tlsuser', 'client.ext');
}

interface Setup { pg: PostgresServer; dir: string; url: string }

async function setUp(t: TestContext): Promise<Setup> {
  const dir = mkdtempSync(join(tmpdir().startsWith('/tmp') ? tmpdir() : '/tmp', 'petstore-tls-'));
  t.after(() => removeDir(dir));
  makeCerts(dir);
  // The server reads its key as its own user, mode 0600; the hba file lets tlsuser in only
  // with a client certificate of its name.
  writeFileSync(join(dir, 'pg_hba.conf'), [
    'local all all trust',
    'hostssl all tlsuser 127.0.0.1/32 cert',
    'host all tlsuser 127.0.0.1/32 reject',
    'host all all 127.0.0.1/32 trust',
    '',
  ].join('\n'));
  const user = isRoot() ? lookupUser('postgres') : undefined;
  for (const f of ['server.key', 'elsewhere.key']) {
    chmodSync(join(dir, f), 0o600);
    if (user) chownSync(join(dir, f), user.uid, user.gid);
  }
  chmodSync(dir, 0o755);
  const pg = await startPostgres({
    t,
    settings: { ssl: 'on', ssl_cert_file: join(dir, 'server.crt'), ssl_key_file: join(dir, 'server.key'), ssl_ca_file: join(dir, 'ca.crt'), hba_file: join(dir, 'pg_hba.conf') },
  });
  await pg.psql('CREATE ROLE tlsuser LOGIN SUPERUSER');
  return { pg, dir, url: pg.url };
}

function recordingLogger(): Logger & { lines: Array<{ level: LogLevel; msg: string; fields?: Record<string, unknown> }> } {
  const lines: Array<{ level: LogLevel; msg: string; fields?: Record<string, unknown> }> = [];
  return { lines, log: (level, msg, fields) => void lines.push({ level, msg, fields }) };
}

async function opens(url: string, pg: PostgresServer): Promise<{ sslmode: unknown; encrypted: string }> {
  const logger = recordingLogger();
  const store = await openPostgresStore(url, { logger });
  try {
    await store.create({ name: 'Rex', categoryId: 1 });
    const encrypted = await pg.psql("SELECT bool_and(s.ssl) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) WHERE a.application_name = 'petstore'");
    return { sslmode: logger.lines.find((l) => l.msg === 'store opened')?.fields?.sslmode, encrypted };
  } finally {
    await store.close();
  }
}

async function refused(url: string, pattern: RegExp): Promise<void> {
  await assert.rejects(openPostgresStore(`${url}&connect_timeout=5`, { logger: silentLogger }), (err: Error) => {
    assert.ok(err instanceof StoreOpenError, String(err));
    assert.match(err.message, pattern);
    assert.doesNotMatch(err.message, /unreachable/);
    return true;
  });
}

test('verify-full with sslrootcert: encrypted and verified; without the CA, or with another, refused saying how to trust it', { skip }, async (t) => {
  const { pg, dir, url } = await setUp(t);
  const ca = join(dir, 'ca.crt');
  assert.deepEqual(await opens(`${url}?sslmode=verify-full&sslrootcert=${ca}`, pg), { sslmode: 'verify-full', encrypted: 't\n' });
  assert.deepEqual(await opens(`${url.replace('127.0.0.1', 'localhost')}?sslmode=verify-full&sslrootcert=${ca}`, pg), { sslmode: 'verify-full', encrypted: 't\n' });
  await refused(`${url}?sslmode=verify-full`, /refused petstore's connection: [^;]*certificate[^;]*; to trust the server's certificate, name its CA in the store URL \(sslrootcert=/);
  await refused(`${url}?sslmode=verify-ca&sslrootcert=${join(dir, 'other-ca.crt')}`, /NODE_EXTRA_CA_CERTS/);
  // require: encrypted, not verified; with a CA named, verified as verify-ca (libpq's rule).
  assert.deepEqual(await opens(`${url}?sslmode=require`, pg), { sslmode: 'require', encrypted: 't\n' });
  assert.deepEqual(await opens(`${url}?sslmode=require&sslrootcert=${ca}`, pg), { sslmode: 'verify-ca', encrypted: 't\n' });
  await refused(`${url}?sslmode=require&sslrootcert=${join(dir, 'other-ca.crt')}`, /sslrootcert=/);
  // No sslmode: plain, as before.
  assert.deepEqual(await opens(url, pg), { sslmode: 'disable', encrypted: 'f\n' });
});

test('a certificate for another name: verify-full refuses it, verify-ca takes it', { skip }, async (t) => {
  const { pg, dir, url } = await setUp(t);
  // The server's certificate and key files replaced, then a reload: new sessions get them.
  copyFileSync(join(dir, 'elsewhere.crt'), join(dir, 'server.crt'));
  copyFileSync(join(dir, 'elsewhere.key'), join(dir, 'server.key'));
  assert.equal(await pg.psql('SELECT pg_reload_conf()'), 't\n');
  await until('the new certificate is in force', () => /reloading configuration files/.test(pg.log()));
  const ca = join(dir, 'ca.crt');
  await refused(`${url}?sslmode=verify-full&sslrootcert=${ca}`, /is not for the host in the store URL: use the name the certificate is for, or sslmode=verify-ca/);
  assert.deepEqual(await opens(`${url}?sslmode=verify-ca&sslrootcert=${ca}`, pg), { sslmode: 'verify-ca', encrypted: 't\n' });
});

test('a client certificate: the user it names gets in with it, and is refused without it', { skip }, async (t) => {
  const { pg, dir, url } = await setUp(t);
  const tlsUrl = url.replace('postgres@', 'tlsuser@');
  const base = `${tlsUrl}?sslmode=verify-full&sslrootcert=${join(dir, 'ca.crt')}`;
  assert.deepEqual(await opens(`${base}&sslcert=${join(dir, 'client.crt')}&sslkey=${join(dir, 'client.key')}`, pg), { sslmode: 'verify-full', encrypted: 't\n' });
  await refused(base, /refused petstore's connection: .*certificate.*; check the user name and password in the store URL/);
});

test('TLS options that cannot work stop the start naming the option and the file', { skip }, async () => {
  const base = 'postgres://u:s3cret@127.0.0.1:5432/db';
  const cases: Array<[string, RegExp]> = [
    ['?sslmode=verify-full&sslrootcert=/nonexistent/ca.crt', /sslrootcert \/nonexistent\/ca\.crt cannot be read: no such file/],
    [`?sslmode=verify-full&sslrootcert=${import.meta.filename ?? '/etc/hostname'}`, /holds no PEM certificate/],
    ['?sslmode=maybe', /sslmode must be one of disable, allow, prefer, require, verify-ca, verify-full/],
    ['?sslrootcert=/x.crt', /need sslmode=verify-full/],
    ['?sslmode=require&sslrootcert=system', /sslrootcert=system needs sslmode=verify-full/],
    ['?sslmode=verify-full&sslcert=/x.crt', /sslcert and sslkey go together/],
    ['?sslmode=verify-full&sslcrl=/x.crl', /sslcrl is not supported/],
  ];
  for (const [query, pattern] of cases) {
    await assert.rejects(openPostgresStore(`${base}${query}`, { logger: silentLogger }), (err: Error) => {
      assert.ok(err instanceof StoreOpenError, query);
      assert.match(err.message, pattern, query);
      assert.doesNotMatch(err.message, /s3cret/);
      return true;
    });
  }
});
