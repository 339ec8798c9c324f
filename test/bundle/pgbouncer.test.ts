// Behind PgBouncer in transaction pooling mode, as Debian ships it (no
// ignore_startup_parameters), with fewer server connections than petstore opens, so that
// consecutive transactions of one client connection land on different server connections:
// keyed creates through two workers all answered 201, every one a row and on a page, replays
// answered from the key, and no "prepared statement ... does not exist" (nor any other error)
// in the server's log. A startup parameter the pooler refuses, or a wrong password, stops the
// start with a refusal that says what to change, never "unreachable".
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { KEYS, UNTIL_MS, followPages, runBundle, startBundle, tempDir, testConfig, writeConfig } from '../support/bundle.js';
import { skipUnless } from '../support/engines.js';
import { pgbouncerMissing, startPgBouncer } from '../support/pgbouncer.js';
import { startPostgres } from '../support/postgres.js';
import { startRedis } from '../support/redis.js';

const skip = skipUnless('PgBouncer black-box tests', ['postgres', 'redis']) || pgbouncerMissing() || false;
const CLIENTS = 40;
const PER_CLIENT = 15;
/**
 * The most one test may take before it fails (every wait inside is bounded too: a request by
 * 30 s of silence, a start by its ready line, a failed start by its exit): a bound on how long
 * a broken run takes to fail, far above a run on two busy cores (the longer test took 26 s,
 * the file 90 s beside three other files).
 */
const TEST_MS = 10 * UNTIL_MS;

/** One keyed create on a connection of its own (so both workers get some). */
function create(base: string, body: unknown, idempotencyKey: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}/pets`, {
      method: 'POST',
      agent: false,
      headers: { connection: 'close', authorization: `Bearer ${KEYS.enterprise}`, 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
    }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => { text += d; });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.setTimeout(UNTIL_MS, () => req.destroy(new Error(`create ${idempotencyKey}: no answer within ${UNTIL_MS / 1000} s`)));
    req.end(JSON.stringify(body));
  });
}

test('two workers behind PgBouncer (transaction mode): keyed creates all 201, every one a row and on a page, no prepared-statement errors', { skip, timeout: TEST_MS }, async (t) => {
  // Every error the server raises is in its log (the default, said here so that it stays so).
  const pg = await startPostgres({ t, settings: { log_min_messages: 'warning', log_min_error_statement: 'error' } });
  const bouncer = await startPgBouncer({ t, serverPort: pg.port, database: pg.database, poolSize: 3 });
  const redis = await startRedis({ t });
  const dir = tempDir();
  const srv = await startBundle(['--config', writeConfig(dir, testConfig()), '--store', bouncer.url, '--limits', redis.url, '--workers', '2'], { cwd: dir });
  t.after(() => srv.stop('SIGKILL'));

  const made = new Map<string, number>();
  let failures: string[] = [];
  await Promise.all(Array.from({ length: CLIENTS }, async (_, c) => {
    for (let i = 0; i < PER_CLIENT; i++) {
      const key = `c${c}-${i}`;
      const res = await create(srv.url, { name: `Pet ${key}`, categoryId: c, status: 'available' }, key);
      if (res.status !== 201) failures.push(`${key}: ${res.status} ${res.body}`);
      else made.set(key, (JSON.parse(res.body) as { id: number }).id);
      // Every fifth create sent again with its key: the same pet, not a second one.
      if (i % 5 === 0 && res.status === 201) {
        const again = await create(srv.url, { name: `Pet ${key}`, categoryId: c, status: 'available' }, key);
        if (again.status !== 201 || again.body !== res.body) failures.push(`${key} replayed: ${again.status} ${again.body}`);
      }
    }
  }));
  assert.deepEqual(failures.slice(0, 5), [], `${failures.length} creates not answered 201`);
  failures = [];
  const total = CLIENTS * PER_CLIENT;
  assert.equal(made.size, total);
  assert.equal(new Set(made.values()).size, total, 'one pet per key');
  assert.equal(await pg.psql('SELECT count(*) FROM petstore_pets'), `${total}\n`, 'every 201 is a row, and nothing else is');
  // (Rows of scope '' are the group commit's batch tokens, not keys.)
  assert.equal(await pg.psql("SELECT count(*) FROM petstore_idempotency_keys WHERE scope <> ''"), `${total}\n`);
  // Pages read through both workers (a connection each) see every pet once, in id order.
  const seen: number[] = [];
  await followPages(`${srv.url}/pets?limit=50`, KEYS.enterprise, (res) => {
    for (const pet of res.json as Array<{ id: number }>) seen.push(pet.id);
  });
  assert.deepEqual(seen, [...made.values()].sort((a, b) => a - b), 'every pet on a page, once, in order');

  const serverLog = pg.log();
  assert.doesNotMatch(serverLog, /prepared statement .* does not exist/, 'no statement outlived its transaction');
  assert.doesNotMatch(serverLog, /ERROR:/, `no statement failed on the server:\n${serverLog.slice(-2000)}`);
  assert.doesNotMatch(bouncer.log(), /unsupported startup parameter|pooler error/, bouncer.log().slice(-2000));
});

test('a startup parameter the pooler refuses, or a wrong password: the start stops with a refusal that says what to change', { skip, timeout: TEST_MS }, async (t) => {
  const pg = await startPostgres({ t });
  const bouncer = await startPgBouncer({ t, serverPort: pg.port, database: pg.database });
  const dir = tempDir();
  const config = writeConfig(dir, testConfig());

  const param = await runBundle(['--config', config, '--port', '0', '--store', `${bouncer.url}?search_path=public`], { cwd: dir, timeoutMs: UNTIL_MS });
  assert.equal(param.code, 1, param.stderr);
  assert.match(param.stderr, /refused petstore's connection: unsupported startup parameter: search_path; remove search_path from the store URL's options/);
  assert.match(param.stderr, /ALTER ROLE/);
  assert.doesNotMatch(param.stderr, /unreachable/);

  const password = await runBundle(['--config', config, '--port', '0', '--store', bouncer.url.replace(bouncer.password, 'wrong')], { cwd: dir, timeoutMs: UNTIL_MS });
  assert.equal(password.code, 1, password.stderr);
  assert.match(password.stderr, /refused petstore's connection: .*authentication failed; check the user name and password in the store URL/);
  assert.doesNotMatch(password.stderr, /unreachable|wrong/, 'no password in the message');
});
