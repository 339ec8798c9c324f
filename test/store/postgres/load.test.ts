// The PostgreSQL store under load, with every engine healthy: ids become visible in the order
// they were given across processes; no statement starves behind others; seeds and creators
// together get no false 503; concurrent creates share statements; a damaged schema is
// refused; URL mistakes name the setting; IPv6 literal hosts work.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import postgres from 'postgres';
import { openPostgresStore, StoreOpenError } from '../../../src/store/index.js';
import type { PostgresStore } from '../../../src/store/index.js';
import { silentLogger } from '../../../src/core/index.js';
import { skipUnless } from '../../support/engines.js';
import { startPostgres } from '../../support/postgres.js';

const skip = skipUnless('PostgreSQL store tests', ['postgres']);
const pet = { name: 'Rex', categoryId: 1, status: 'available' as const };

test('ids become visible in order: a reader never sees an id while a lower one can still appear (two stores, 16 creators)', { skip }, async (t) => {
  const pg = await startPostgres({ t });
  const a = await openPostgresStore(pg.url, { logger: silentLogger });
  const b = await openPostgresStore(pg.url, { logger: silentLogger });
  const reader = postgres(pg.url, { max: 1, onnotice: () => undefined });
  t.after(() => Promise.all([a.close(), b.close(), reader.end()]));
  let writing = true;
  let created = 0;
  const seen: number[][] = [];
  // At least 40 creates each, and on until the reader has looked a few times while they ran
  // (on a fast machine group commit can finish 640 creates between two looks).
  const creators = Array.from({ length: 16 }, async (_, i) => {
    const store = i % 2 === 0 ? a : b;
    for (let n = 0; n < 40 || seen.length < 6; n++) {
      await store.create({ name: `c${i}-${n}`, categoryId: i });
      created++;
    }
  });
  const reading = (async () => {
    while (writing) seen.push((await reader.unsafe('SELECT id FROM petstore_pets ORDER BY id')).map((r) => Number(r.id)));
  })();
  await Promise.all(creators);
  writing = false;
  await reading;
  const final = new Set((await reader.unsafe('SELECT id FROM petstore_pets')).map((r) => Number(r.id)));
  assert.equal(final.size, created);
  assert.ok(created >= 640, String(created));
  let holes = 0;
  for (const ids of seen) {
    const max = ids[ids.length - 1] ?? 0;
    const have = new Set(ids);
    for (const id of final) if (id < max && !have.has(id)) holes++;
  }
  assert.ok(seen.length > 5, `the reader looked ${seen.length} times`);
  assert.equal(holes, 0, 'an id below a visible one appeared later');
});

test('a statement never starves under steady load: 16 concurrent ~20 ms statements on a pool of 4 all finish, FIFO', { skip }, async (t) => {
  const pg = await startPostgres({ t });
  const store = await openPostgresStore(`${pg.url}?query_timeout=1000`, { logger: silentLogger });
  t.after(() => store.close());
  await store.create(pet);
  // Steady load: 16 workers each issuing get()s back to back for a while, plus a slow
  // statement mix; every get must be answered, none refused, and the longest wait stays a
  // small multiple of the others (counted in rounds, not time).
  let stop = false;
  let answered = 0;
  const workers = Array.from({ length: 16 }, async () => {
    while (!stop) {
      await store.list({ limit: 1 });
      await store.create(pet);
      answered++;
    }
  });
  // A probe request issued repeatedly meanwhile: each must be answered while the load lasts.
  const waits: number[] = [];
  for (let i = 0; i < 20; i++) {
    const before = answered;
    await store.get(1);
    waits.push(answered - before);
  }
  stop = true;
  await Promise.all(workers);
  // Each get waited behind at most the statements queued ahead of it: with 16 workers and
  // FIFO, a few rounds, never the whole run.
  assert.ok(Math.max(...waits) < 64, `a get waited ${Math.max(...waits)} rounds of the others`);
});

test('three concurrent large seeds and 16 creators: no 503, every 201\'s pet is in the table, ids in order', { skip }, async (t) => {
  const pg = await startPostgres({ t });
  const store = await openPostgresStore(`${pg.url}?query_timeout=500`, { logger: silentLogger });
  const other = await openPostgresStore(`${pg.url}?query_timeout=500`, { logger: silentLogger });
  t.after(() => Promise.all([store.close(), other.close()]));
  const big = Array.from({ length: 60_000 }, (_, i) => ({ name: `s${i}`, categoryId: i }));
  const failures: string[] = [];
  const made: number[] = [];
  let seeding = true;
  const creators = Array.from({ length: 16 }, async (_, i) => {
    while (seeding) {
      try {
        made.push((await (i % 2 ? store : other).create(pet)).pet.id);
      } catch (err) {
        failures.push(String(err));
      }
    }
  });
  const seeds = await Promise.allSettled([store.seed(big), other.seed(big), store.seed(big)]);
  seeding = false;
  await Promise.all(creators);
  assert.deepEqual(seeds.map((s) => s.status), ['fulfilled', 'fulfilled', 'fulfilled'], JSON.stringify(seeds.filter((s) => s.status === 'rejected')));
  assert.deepEqual(failures, [], 'no create failed against a healthy database');
  const inTable = Number(await pg.psql(`SELECT count(*) FROM petstore_pets WHERE id IN (${made.join(',') || 0})`));
  assert.equal(inTable, made.length);
  assert.equal(await pg.psql('SELECT count(*) FROM petstore_pets'), `${180_000 + made.length}\n`);
});

test('concurrent creates share statements and commits: far fewer statements than creates', { skip }, async (t) => {
  const pg = await startPostgres({ t });
  const store: PostgresStore = await openPostgresStore(pg.url, { logger: silentLogger });
  t.after(() => store.close());
  await Promise.all(Array.from({ length: 200 }, (_, i) => store.create({ name: `p${i}`, categoryId: i })));
  const { batches, creates } = store.batchStats;
  assert.equal(creates, 200);
  assert.ok(batches <= 20, `${batches} statements for 200 concurrent creates`);
  assert.equal(await pg.psql('SELECT count(*) FROM petstore_pets'), '200\n');
  assert.equal(await pg.psql('SELECT max(id) FROM petstore_pets'), '200\n', 'no id skipped');
});

test('one process keeps two batches of creates in flight, one of several processes (--workers) keeps one: each flush of the shared id lock carries more creates', { skip }, async (t) => {
  const pg = await startPostgres({ t });
  const alone: PostgresStore = await openPostgresStore(pg.url, { logger: silentLogger });
  const worker: PostgresStore = await openPostgresStore(pg.url, { logger: silentLogger, processes: 2 });
  t.after(() => Promise.all([alone.close(), worker.close()]));
  // Creates arriving turn after turn while batches are under way: a batch is sent whenever
  // fewer than the cap are in flight, so the peak shows the cap.
  const waves = async (store: PostgresStore): Promise<void> => {
    const all: Promise<unknown>[] = [];
    for (let w = 0; w < 20; w++) {
      for (let i = 0; i < 5; i++) all.push(store.create({ name: `w${w}-${i}`, categoryId: 1 }));
      await new Promise((r) => setImmediate(r));
    }
    await Promise.all(all);
  };
  await waves(alone);
  await waves(worker);
  assert.equal(alone.batchStats.peakInFlight, 2);
  assert.equal(worker.batchStats.peakInFlight, 1);
  assert.equal(worker.batchStats.creates, 100);
  assert.ok(worker.batchStats.batches < 100, `${worker.batchStats.batches} statements for 100 creates: creates gather while one batch runs`);
  assert.equal(await pg.psql('SELECT count(*) FROM petstore_pets'), '200\n');
});

test('one batch in flight (--workers): the next batch waits until as many creates as the last one carried have come, so creates arriving turn after turn do not split into small batches', { skip }, async (t) => {
  const pg = await startPostgres({ t });
  // The time bound is set far away, so that only the count decides here.
  const store: PostgresStore = await openPostgresStore(pg.url, { logger: silentLogger, processes: 2, gatherMs: 60_000 });
  t.after(() => store.close());
  await Promise.all(Array.from({ length: 10 }, (_, i) => store.create({ name: `first${i}`, categoryId: 1 })));
  assert.equal(store.batchStats.batches, 1);
  // Ten creators coming back one per turn, as answered clients do.
  const again: Promise<unknown>[] = [];
  for (let i = 0; i < 10; i++) {
    again.push(store.create({ name: `again${i}`, categoryId: 1 }));
    await new Promise((r) => setImmediate(r));
  }
  await Promise.all(again);
  assert.equal(store.batchStats.batches, 2, 'the ten went in one batch, not the first alone and the rest after it');
  assert.equal(store.batchStats.creates, 20);
});

test('a damaged schema refuses the start naming what is wrong; a missing plain index is rebuilt and said', { skip }, async (t) => {
  const pg = await startPostgres({ t });
  await (await openPostgresStore(pg.url, { logger: silentLogger })).close();
  await pg.psql('UPDATE petstore_schema SET version = 0');
  await assert.rejects(openPostgresStore(pg.url, { logger: silentLogger }), (err: Error) =>
    err instanceof StoreOpenError && /version row says 0, which no petstore release writes.*damaged/.test(err.message));
  await pg.psql('UPDATE petstore_schema SET version = 2; DROP TABLE petstore_idempotency_keys');
  await assert.rejects(openPostgresStore(pg.url, { logger: silentLogger }), /the table petstore_idempotency_keys is missing: the schema is damaged/);
  await pg.psql('DROP TABLE petstore_pets; DELETE FROM petstore_schema');
  await (await openPostgresStore(pg.url, { logger: silentLogger })).close();
  await pg.psql('DROP INDEX petstore_pets_status_id');
  const lines: Array<{ msg: string; fields?: Record<string, unknown> }> = [];
  const store = await openPostgresStore(pg.url, { logger: { log: (_l, msg, fields) => void lines.push({ msg, ...(fields ? { fields } : {}) }) } });
  t.after(() => store.close());
  assert.deepEqual(lines.find((l) => /repaired/.test(l.msg))?.fields?.indexes, ['petstore_pets_status_id']);
  assert.equal(await pg.psql("SELECT count(*) FROM pg_indexes WHERE indexname = 'petstore_pets_status_id'"), '1\n');
  await pg.psql('ALTER TABLE petstore_pets DROP CONSTRAINT petstore_pets_pkey');
  await assert.rejects(openPostgresStore(pg.url, { logger: silentLogger }), /the primary key index petstore_pets_pkey is missing/);
});

test('store URL: a bad percent-encoding names the setting and the part; an IPv6 literal host works', { skip }, async (t) => {
  await assert.rejects(openPostgresStore('postgres://u:p%zz@127.0.0.1:5432/db', { logger: silentLogger }), (err: Error) =>
    err instanceof StoreOpenError && /store URL's password has a bad percent-encoding/.test(err.message) && !/URI malformed/.test(err.message));
  const pg = await startPostgres({ t, settings: { listen_addresses: '127.0.0.1,::1' } });
  const store = await openPostgresStore(`postgres://postgres@[::1]:${pg.port}/${pg.database}`, { logger: silentLogger });
  t.after(() => store.close());
  assert.equal((await store.create(pet)).pet.id, 1);
});
