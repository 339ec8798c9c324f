// The PostgreSQL store against a real server: schema creation and versions, outages (stop,
// pause) and recovery without a restart, the id ceiling, commits visible to others before a
// create resolves, and what its messages hold back (the password). The cases every store
// shares are in contract.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { IdsExhaustedError, openPostgresStore, StoreOpenError, StoreUnavailableError, StoreUnreachableError } from '../../../src/store/index.js';
import type { PetStore } from '../../../src/store/index.js';
import { silentLogger } from '../../../src/core/index.js';
import type { LogLevel, Logger } from '../../../src/core/types.js';
import { skipUnless } from '../../support/engines.js';
import { freePort } from '../../support/free-port.js';
import { startPostgres } from '../../support/postgres.js';

const skip = skipUnless('PostgreSQL store tests', ['postgres']);

function recordingLogger(): Logger & { lines: Array<{ level: LogLevel; msg: string; fields?: Record<string, unknown> }> } {
  const lines: Array<{ level: LogLevel; msg: string; fields?: Record<string, unknown> }> = [];
  return { lines, log: (level, msg, fields) => void lines.push({ level, msg, fields }) };
}

const pet = { name: 'Rex', categoryId: 1, status: 'available' as const };

test('the schema: created once when two stores open at once, with one version row', { skip }, async (t) => {
  const pg = await startPostgres({ t });
  const logger = recordingLogger();
  const [a, b] = await Promise.all([openPostgresStore(pg.url, { logger }), openPostgresStore(pg.url, { logger })]);
  t.after(() => Promise.all([a.close(), b.close()]));
  assert.equal(await pg.psql('SELECT version FROM petstore_schema'), '2\n');
  assert.equal(await pg.psql("SELECT count(*) FROM pg_indexes WHERE tablename = 'petstore_pets'"), '2\n', 'primary key and (status, id)');
  const opened = logger.lines.filter((l) => l.msg === 'store opened');
  assert.equal(opened.length, 2);
  assert.deepEqual(opened[0]?.fields, {
    store: `${pg.url}`, schemaVersion: 2, pool: 4, queryTimeoutMs: 5000,
    statementTimeoutMs: 30000, idleInTransactionTimeoutMs: 30000, serverStatementTimeoutMs: 0, prepare: false, sslmode: 'disable', createBatchesInFlight: 2,
  });
  // A third start finds it and changes nothing.
  const c = await openPostgresStore(pg.url, { logger: silentLogger });
  await c.create(pet);
  await c.close();
  assert.equal(await pg.psql('SELECT count(*) FROM petstore_schema'), '1\n');
});

test('a schema of a newer version refuses the start, naming both versions', { skip }, async (t) => {
  const pg = await startPostgres({ t });
  const first = await openPostgresStore(pg.url, { logger: silentLogger });
  await first.create(pet);
  await first.close();
  await pg.psql('UPDATE petstore_schema SET version = 3');
  await assert.rejects(openPostgresStore(pg.url, { logger: silentLogger }), (err: Error) => {
    assert.ok(err instanceof StoreOpenError);
    assert.match(err.message, /petstore schema is version 3, newer than this petstore's \(2\)/);
    return true;
  });
  assert.equal(await pg.psql('SELECT count(*) FROM petstore_pets'), '1\n', 'nothing touched');
});

test('a create resolves only once committed: another session sees the pet at once', { skip }, async (t) => {
  const pg = await startPostgres({ t });
  const store = await openPostgresStore(pg.url, { logger: silentLogger });
  t.after(() => store.close());
  for (let i = 0; i < 5; i++) {
    const created = await store.create({ name: `pet ${i}`, categoryId: i });
    assert.equal(await pg.psql(`SELECT name FROM petstore_pets WHERE id = ${created.pet.id}`), `pet ${i}\n`);
  }
});

test('two stores on one database: each sees the other\'s pets on its next read', { skip }, async (t) => {
  const pg = await startPostgres({ t });
  const a = await openPostgresStore(pg.url, { logger: silentLogger });
  const b = await openPostgresStore(pg.url, { logger: silentLogger });
  t.after(() => Promise.all([a.close(), b.close()]));
  const one = await a.create(pet);
  assert.equal((await b.get(one.pet.id))?.json, one.json);
  const created = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? a : b).create({ name: `p${i}`, categoryId: i })));
  const idsCreated = created.map((c) => c.pet.id).sort((x, y) => x - y);
  assert.equal(new Set(idsCreated).size, 40);
  assert.deepEqual((await a.list({ limit: 100 })).map((p) => p.pet.id), [one.pet.id, ...idsCreated]);
  // A seed in one while the other creates: its ids are planned with creates held off.
  const [seeded] = await Promise.all([a.seed([{ name: 's', categoryId: 0 }, { name: 't', categoryId: 0 }]), ...Array.from({ length: 10 }, () => b.create(pet))]);
  const all = (await b.list({ limit: 100 })).map((p) => p.pet.id);
  assert.equal(new Set(all).size, 53);
  for (const s of seeded) assert.ok(all.includes(s.pet.id));
});

test('ids stop at 2^53 - 1: the create past it is refused as exhausted (507), the ids before it are exact', { skip }, async (t) => {
  const pg = await startPostgres({ t });
  const store = await openPostgresStore(pg.url, { logger: silentLogger });
  t.after(() => store.close());
  await pg.psql(`ALTER TABLE petstore_pets ALTER COLUMN id RESTART WITH ${Number.MAX_SAFE_INTEGER - 1}`);
  assert.equal((await store.create(pet)).pet.id, Number.MAX_SAFE_INTEGER - 1);
  const last = await store.create(pet);
  assert.equal(last.pet.id, Number.MAX_SAFE_INTEGER);
  assert.equal(last.json, `{"id":${Number.MAX_SAFE_INTEGER},"name":"Rex","categoryId":1,"status":"available"}`);
  await assert.rejects(store.create(pet), (err: Error) => err instanceof IdsExhaustedError && !(err instanceof StoreUnavailableError) && /id space exhausted/.test(err.message));
  await assert.rejects(store.seed([{ name: 'x', categoryId: 1 }]), IdsExhaustedError);
  assert.equal((await store.get(Number.MAX_SAFE_INTEGER))?.json, last.json);
  assert.equal(await pg.psql('SELECT count(*) FROM petstore_pets'), '2\n');
});

test('PostgreSQL stopped: every operation is refused as unreachable, then works again without reopening', { skip }, async (t) => {
  const pg = await startPostgres({ t });
  const logger = recordingLogger();
  const store = await openPostgresStore(`${pg.url}?query_timeout=2000&connect_timeout=2`, { logger });
  t.after(() => store.close());
  await store.create(pet);
  await pg.stop();
  // A read first: the connections' closes arrive with the postmaster's exit, but a create
  // written to one before its close is read is rightly of unknown outcome (another line).
  // Once the read has failed, every close has been read and nothing more is sent.
  for (const op of [() => store.get(1), () => store.list({ limit: 5 }), () => store.create(pet), () => store.seed([pet]), () => store.reset()]) {
    await assert.rejects(op() as Promise<unknown>, StoreUnreachableError);
  }
  const down = logger.lines.filter((l) => l.level === 'error');
  assert.equal(down.length, 1, `one error line for the outage, not one per operation: ${JSON.stringify(down)}`);
  assert.match(String(down[0]?.msg), /PostgreSQL unreachable/);
  await pg.start();
  assert.equal((await store.create(pet)).pet.id, 2, 'nothing of the refused seed was stored');
  assert.equal((await store.get(1))?.pet.name, 'Rex');
  assert.ok(logger.lines.some((l) => l.level === 'info' && l.msg === 'PostgreSQL answers again'));
});

test('PostgreSQL hung (paused): operations are refused after the query timeout, and work again once it answers', { skip }, async (t) => {
  const pg = await startPostgres({ t });
  const store: PetStore = await openPostgresStore(`${pg.url}?query_timeout=300&connect_timeout=1`, { logger: silentLogger });
  t.after(() => store.close());
  await store.create(pet);
  pg.pause();
  t.after(() => pg.resume());
  await assert.rejects(store.create(pet), StoreUnreachableError);
  await assert.rejects(store.get(1) as Promise<unknown>, StoreUnreachableError);
  await assert.rejects(store.list({ limit: 5 }) as Promise<unknown>, StoreUnreachableError);
  pg.resume();
  // The stuck pool was replaced: a new connection answers (retry while the server wakes up).
  let created;
  for (let i = 0; i < 50 && created === undefined; i++) {
    created = await store.create(pet).catch(() => undefined);
  }
  assert.ok(created !== undefined, 'a create succeeds after resume');
  assert.equal((await store.get(1))?.pet.name, 'Rex');
});

test('open: bad URL settings and an unreachable server stop the start; the password is never shown', { skip }, async () => {
  await assert.rejects(openPostgresStore('postgres://u:s3cret@127.0.0.1:5432/db?query_timeout=abc', { logger: silentLogger }), (err: Error) => {
    assert.ok(err instanceof StoreOpenError);
    assert.match(err.message, /query_timeout must be given once, an integer from 100 to 600000/);
    assert.doesNotMatch(err.message, /s3cret/);
    return true;
  });
  await assert.rejects(openPostgresStore('postgres://u:s3cret@127.0.0.1:5432/db?max=0', { logger: silentLogger }), /max must be/);
  const port = await freePort();
  await assert.rejects(openPostgresStore(`postgres://u:s3cret@127.0.0.1:${port}/db?connect_timeout=1`, { logger: silentLogger }), (err: Error) => {
    assert.ok(err instanceof StoreOpenError);
    assert.match(err.message, new RegExp(`^PostgreSQL store postgres://u:\\*\\*\\*@127\\.0\\.0\\.1:${port}/db\\?connect_timeout=1: cannot open it: .*ECONNREFUSED`));
    assert.doesNotMatch(err.message, /s3cret/);
    return true;
  });
});
