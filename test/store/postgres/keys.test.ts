// Idempotency keys in the PostgreSQL store, against a real server: the upgrade of a version 1
// database, two pools racing on one key, a key whose first transaction is still open (and
// then commits or rolls back), the key and the pet kept or lost together, the sweep of expired
// keys. The cases every store shares are in idempotency-contract.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import postgres from 'postgres';
import { ManualClock } from '../../../src/core/clock.js';
import { silentLogger } from '../../../src/core/index.js';
import type { LogLevel, Logger, NewPet } from '../../../src/core/types.js';
import { IdsExhaustedError, newPetFingerprint, openPostgresStore, StoreUnavailableError, StoreUnreachableError } from '../../../src/store/index.js';
import type { CreateOutcome, IdempotencyKey } from '../../../src/store/index.js';
import { skipUnless } from '../../support/engines.js';
import { startPostgres } from '../../support/postgres.js';

const skip = skipUnless('PostgreSQL idempotency key tests', ['postgres']);
const HOUR = 3_600_000;
const SCOPE = 'a'.repeat(64);
const REX: NewPet = { name: 'Rex', categoryId: 1, status: 'available' };
const TOM: NewPet = { name: 'Tom', categoryId: 2 };

function idem(key: string, pet: NewPet): IdempotencyKey {
  return { scope: SCOPE, key, fingerprint: newPetFingerprint(pet) };
}

function recordingLogger(): Logger & { lines: Array<{ level: LogLevel; msg: string; fields?: Record<string, unknown> }> } {
  const lines: Array<{ level: LogLevel; msg: string; fields?: Record<string, unknown> }> = [];
  return { lines, log: (level, msg, fields) => void lines.push({ level, msg, fields }) };
}

/** The schema as release 1 (schema version 1) created it, with one pet. */
const VERSION_1 = `
  CREATE TABLE petstore_schema (singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton), version integer NOT NULL);
  CREATE TABLE petstore_pets (
    id bigint GENERATED ALWAYS AS IDENTITY (MINVALUE 1 MAXVALUE 9007199254740991 NO CYCLE) PRIMARY KEY,
    name text NOT NULL CHECK (name <> ''),
    category_id bigint NOT NULL CHECK (category_id BETWEEN -9007199254740991 AND 9007199254740991),
    status text CHECK (status IN ('available', 'pending', 'sold')),
    created_at timestamptz NOT NULL DEFAULT now()
  );
  CREATE INDEX petstore_pets_status_id ON petstore_pets (status, id);
  INSERT INTO petstore_schema (version) VALUES (1);
  INSERT INTO petstore_pets (name, category_id) VALUES ('Old', 5);`;

test('a version 1 database is upgraded to 2 at start (once, by one of two stores opening together); its pets stay', { skip }, async (t) => {
  const pg = await startPostgres({ t });
  await pg.psql(VERSION_1);
  const logger = recordingLogger();
  const clock = new ManualClock();
  const [a, b] = await Promise.all([openPostgresStore(pg.url, { logger, clock }), openPostgresStore(pg.url, { logger, clock })]);
  t.after(() => Promise.all([a.close(), b.close()]));
  assert.equal(await pg.psql('SELECT version FROM petstore_schema'), '2\n');
  const upgraded = logger.lines.filter((l) => l.msg === 'store schema upgraded');
  assert.equal(upgraded.length, 1, 'the other found version 2 under the lock');
  assert.deepEqual(upgraded[0]?.fields, { store: pg.url, from: 1, to: 2 });
  assert.deepEqual(logger.lines.filter((l) => l.msg === 'store opened').map((l) => l.fields?.schemaVersion), [2, 2]);
  assert.equal(
    await pg.psql("SELECT indexname FROM pg_indexes WHERE tablename = 'petstore_idempotency_keys' ORDER BY 1"),
    'petstore_idempotency_keys_created\npetstore_idempotency_keys_pkey\n',
  );
  assert.equal((await a.get(1))?.json, '{"id":1,"name":"Old","categoryId":5}');
  const made = await a.createIdempotent(REX, idem('k', REX));
  assert.equal(made.kind, 'created');
  assert.equal(made.kind === 'created' && made.stored.pet.id, 2);
  assert.equal((await b.createIdempotent(REX, idem('k', REX))).kind, 'replayed');
  assert.equal(await pg.psql("SELECT scope, key, pet_id, created_at_ms FROM petstore_idempotency_keys WHERE scope <> ''"), `${SCOPE}|k|2|${clock.now()}\n`);
});

test('a schema newer than version 2 refuses the start, naming both versions', { skip }, async (t) => {
  const pg = await startPostgres({ t });
  await (await openPostgresStore(pg.url, { logger: silentLogger })).close();
  await pg.psql('UPDATE petstore_schema SET version = 3');
  await assert.rejects(openPostgresStore(pg.url, { logger: silentLogger }), /petstore schema is version 3, newer than this petstore's \(2\)/);
});

test('two stores (two pools, as two processes) racing on one key: one pet; every other answer replays it or is in flight', { skip }, async (t) => {
  const pg = await startPostgres({ t });
  const clock = new ManualClock();
  const a = await openPostgresStore(pg.url, { logger: silentLogger, clock });
  const b = await openPostgresStore(pg.url, { logger: silentLogger, clock });
  t.after(() => Promise.all([a.close(), b.close()]));
  for (let round = 0; round < 10; round++) {
    const pet: NewPet = { name: `pet ${round}`, categoryId: round };
    const outcomes = await Promise.all(Array.from({ length: 8 }, (_, i) => (i % 2 === 0 ? a : b).createIdempotent(pet, idem(`race-${round}`, pet))));
    const kinds = outcomes.map((o) => o.kind);
    assert.equal(kinds.filter((k) => k === 'created').length, 1, kinds.join());
    assert.ok(!kinds.includes('mismatch'));
    const bodies = new Set(outcomes.flatMap((o) => (o.kind === 'in_flight' || o.kind === 'mismatch' ? [] : [o.stored.json])));
    assert.equal(bodies.size, 1, [...bodies].join('\n'));
  }
  assert.equal(await pg.psql('SELECT count(*) FROM petstore_pets'), '10\n');
  assert.equal(await pg.psql("SELECT count(*) FROM petstore_idempotency_keys WHERE scope <> ''"), '10\n');
  assert.equal(await pg.psql("SELECT count(*) FROM petstore_pets p JOIN petstore_idempotency_keys k ON k.pet_id = p.id AND k.scope <> ''"), '10\n', 'each key names its pet');
});

test('a key whose first transaction is still open: the repeat waits for it, then replays its pet (commit) or creates (rollback)', { skip }, async (t) => {
  const pg = await startPostgres({ t });
  const clock = new ManualClock();
  const store = await openPostgresStore(pg.url, { logger: silentLogger, clock });
  const other = postgres(pg.url, { max: 1, onnotice: () => undefined });
  t.after(() => Promise.all([store.close(), other.end()]));
  for (const ending of ['commit', 'rollback'] as const) {
    await store.reset();
    let finish!: () => void;
    const held = new Promise<void>((resolve) => { finish = resolve; });
    let inserted!: () => void;
    const keyInserted = new Promise<void>((resolve) => { inserted = resolve; });
    // Another process's keyed create, its transaction held open after writing the key and pet.
    const tx = other.begin(async (sql) => {
      await sql.unsafe(`WITH pet AS (INSERT INTO petstore_pets (name, category_id, status) VALUES ('Rex', 1, 'available') RETURNING id)
        INSERT INTO petstore_idempotency_keys (scope, key, fingerprint, pet_id, created_at_ms) SELECT $1, 'k', $2, id, $3 FROM pet`,
      [SCOPE, newPetFingerprint(REX), clock.now()]);
      inserted();
      await held;
      if (ending === 'rollback') throw new Error('rolled back');
    }).catch((err: Error) => err.message);
    await keyInserted;
    let settled: CreateOutcome | undefined;
    const repeat = store.createIdempotent(REX, idem('k', REX)).then((o) => { settled = o; return o; });
    // It waits on the open transaction's key (a lock, not a time): still unsettled while held.
    for (let i = 0; i < 50; i++) {
      const waiting = await pg.psql("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'WITH ordered AS%'");
      if (waiting === '1\n') break;
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.equal(settled, undefined, 'the repeat waits while the first is open');
    finish();
    await tx;
    const outcome = await repeat;
    if (ending === 'commit') {
      assert.equal(outcome.kind, 'replayed', JSON.stringify(outcome));
      assert.equal(outcome.kind === 'replayed' && outcome.stored.json, '{"id":1,"name":"Rex","categoryId":1,"status":"available"}');
      assert.equal(await pg.psql('SELECT count(*) FROM petstore_pets'), '1\n');
    } else {
      assert.equal(outcome.kind, 'created', 'the first stored nothing: the repeat creates');
      assert.equal(await pg.psql('SELECT name FROM petstore_pets'), 'Rex\n');
      assert.equal(await pg.psql("SELECT count(*) FROM petstore_idempotency_keys WHERE scope <> ''"), '1\n');
    }
  }
});

test('the key and the pet are written together: a create that fails stores neither, and its key stays free', { skip }, async (t) => {
  const pg = await startPostgres({ t });
  const store = await openPostgresStore(pg.url, { logger: silentLogger, clock: new ManualClock() });
  t.after(() => store.close());
  await pg.psql(`ALTER TABLE petstore_pets ALTER COLUMN id RESTART WITH ${Number.MAX_SAFE_INTEGER}`);
  const last = await store.createIdempotent(TOM, idem('last', TOM));
  assert.equal(last.kind === 'created' && last.stored.pet.id, Number.MAX_SAFE_INTEGER);
  await assert.rejects(store.createIdempotent(REX, idem('k', REX)), (err: Error) => err instanceof IdsExhaustedError && /id space exhausted/.test(err.message));
  assert.equal(await pg.psql("SELECT key FROM petstore_idempotency_keys WHERE scope <> ''"), 'last\n', 'no key without its pet');
  assert.equal(await pg.psql('SELECT count(*) FROM petstore_pets'), '1\n');
  await pg.psql('ALTER TABLE petstore_pets ALTER COLUMN id RESTART WITH 5');
  const retry = await store.createIdempotent(TOM, idem('k', TOM));
  assert.equal(retry.kind, 'created', 'the failed create left the key free: another payload is not a mismatch');
});

test('expired keys: ignored on lookup, swept 1000 at a time oldest first, after every 100 keyed creates and at open', { skip }, async (t) => {
  const pg = await startPostgres({ t });
  const clock = new ManualClock();
  const count = async (where = 'true'): Promise<number> => Number(await pg.psql(`SELECT count(*) FROM petstore_idempotency_keys WHERE ${where}`));
  const store = await openPostgresStore(pg.url, { logger: silentLogger, clock, idempotencyRetentionMs: HOUR });
  t.after(() => store.close());
  const expired = (n: number, from = 0): Promise<string> => pg.psql(`INSERT INTO petstore_idempotency_keys (scope, key, fingerprint, pet_id, created_at_ms)
    SELECT '${SCOPE}', 'old-' || g, 'x', g, ${clock.now() - HOUR} - 20000 + g FROM generate_series(${from + 1}, ${from + n}) g`);
  await expired(2500);
  await store.createIdempotent(REX, idem('live', REX));
  assert.equal((await store.createIdempotent(TOM, idem('old-7', TOM))).kind, 'created', 'an expired key is not a mismatch');
  const base = clock.now() - HOUR - 20000; // old-g was created at base + g
  assert.equal(await store.sweepExpiredKeys(), 1000);
  assert.equal(await count("key LIKE 'old-%'"), 1500, '2499 expired and old-7 (taken over, live) less the 1000 swept');
  assert.equal(await pg.psql(`SELECT min(created_at_ms) - ${base} FROM petstore_idempotency_keys WHERE key LIKE 'old-%' AND key <> 'old-7'`), '1002\n', 'the oldest went first');
  assert.equal(await store.sweepExpiredKeys(), 1000);
  assert.equal(await store.sweepExpiredKeys(), 499);
  assert.equal(await store.sweepExpiredKeys(), 0);
  assert.deepEqual((await pg.psql("SELECT key FROM petstore_idempotency_keys WHERE scope <> '' ORDER BY key")).split('\n').filter(Boolean), ['live', 'old-7']);

  // Every 100th keyed create of a process sweeps (not waited for): two were made above.
  await expired(300, 10_000);
  for (let i = 0; i < 97; i++) await store.createIdempotent(REX, idem(`n${i}`, REX));
  assert.equal(await count(`created_at_ms <= ${clock.now() - HOUR}`), 300, 'no sweep before the 100th');
  await store.createIdempotent(REX, idem('n97', REX));
  for (let i = 0; i < 200 && await count(`created_at_ms <= ${clock.now() - HOUR}`) > 0; i++) await new Promise((r) => setTimeout(r, 10));
  assert.equal(await count(`created_at_ms <= ${clock.now() - HOUR}`), 0, 'swept after the 100th');

  // A store opening sweeps what expired meanwhile.
  clock.advance(HOUR);
  const reopened = await openPostgresStore(pg.url, { logger: silentLogger, clock, idempotencyRetentionMs: HOUR });
  t.after(() => reopened.close());
  for (let i = 0; i < 200 && await count() > 0; i++) await new Promise((r) => setTimeout(r, 10));
  assert.equal(await count(), 0);
  assert.equal(await pg.psql('SELECT count(*) FROM petstore_pets'), '100\n', 'pets are never swept');
});

test('creates without keys count one row per batch (its token) towards the next sweep, not one per create', { skip }, async (t) => {
  const pg = await startPostgres({ t });
  const store = await openPostgresStore(pg.url, { logger: silentLogger, clock: new ManualClock(), idempotencyRetentionMs: HOUR });
  t.after(() => store.close());
  const start = store.keyStats.sweeps;
  // 300 concurrent creates go in a few batches: a few token rows, no sweep.
  await Promise.all(Array.from({ length: 300 }, (_, i) => store.create({ name: `p${i}`, categoryId: i })));
  const batches = store.batchStats.batches;
  assert.ok(batches < 20, `${batches} batches`);
  assert.equal(store.keyStats.sweeps, start, 'no sweep for 300 creates in a few batches');
  assert.equal(Number(await pg.psql("SELECT count(*) FROM petstore_idempotency_keys WHERE scope = ''")), batches, 'one token per batch');
  // One create at a time: a batch each, so the 100th batch sweeps.
  for (let i = store.batchStats.batches; i < 99; i++) await store.create(TOM);
  assert.equal(store.keyStats.sweeps, start, 'no sweep before the 100th batch');
  await store.create(TOM);
  assert.equal(store.keyStats.sweeps, start + 1, 'a sweep after the 100th batch');
});

test('PostgreSQL stopped: a keyed create is refused as unreachable and leaves its key free; once back, it creates', { skip }, async (t) => {
  const pg = await startPostgres({ t });
  const store = await openPostgresStore(`${pg.url}?query_timeout=2000&connect_timeout=2`, { logger: silentLogger, clock: new ManualClock() });
  t.after(() => store.close());
  await pg.stop();
  await assert.rejects(store.createIdempotent(REX, idem('k', REX)), StoreUnreachableError);
  await assert.rejects(store.createIdempotent(REX, idem('k', REX)), StoreUnreachableError, 'not in flight: the first was answered');
  await pg.start();
  let outcome: CreateOutcome | undefined;
  for (let i = 0; i < 50 && outcome === undefined; i++) outcome = await store.createIdempotent(TOM, idem('k', TOM)).catch(() => undefined);
  assert.equal(outcome?.kind, 'created', 'another payload is not a mismatch: nothing was stored');
  assert.equal(await pg.psql('SELECT count(*) FROM petstore_pets'), '1\n');
});
