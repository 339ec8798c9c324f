// Idempotent creates in the in-process stores: the outcomes (created, replayed, mismatch, in
// flight), the key written in the pet's own journal line and snapshot line, expiry by the
// injected clock, compaction keeping only young keys, old files still read, damage refused.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { ManualClock } from '../../src/core/clock.js';
import { silentLogger } from '../../src/core/log.js';
import type { NewPet } from '../../src/core/types.js';
import {
  canSnapshot, newPetFingerprint, openFileStore, openMemoryStore, StoreOpenError, StoreUnavailableError,
} from '../../src/store/index.js';
import type { CreateOutcome, DiskOp, FileStoreOptions, IdempotencyKey, LocalPetStore } from '../../src/store/index.js';
import { prepareRestore, type LocalSnapshot } from '../../src/store/snapshot-copy.js';
import { SEGMENT_SIZE } from '../../src/store/pet-index.js';
import { allPets, tempDir } from '../support/bundle.js';
import { until } from '../support/wait.js';

const HOUR = 3_600_000;
const SCOPE_A = 'a'.repeat(64);
const SCOPE_B = 'b'.repeat(64);

function dataFile(): string {
  return join(tempDir(), 'pets.json');
}

function openFile(file: string, clock: ManualClock, extra: Partial<FileStoreOptions> = {}): Promise<LocalPetStore> {
  return openFileStore(file, { logger: silentLogger, clock, ...extra });
}

function idem(key: string, pet: NewPet, scope = SCOPE_A): IdempotencyKey {
  return { scope, key, fingerprint: newPetFingerprint(pet) };
}

function createdId(outcome: CreateOutcome): number {
  assert.ok(outcome.kind === 'created' || outcome.kind === 'replayed', `outcome ${outcome.kind}`);
  return outcome.stored.pet.id;
}

const REX: NewPet = { name: 'Rex', categoryId: 1, status: 'available' };
const TOM: NewPet = { name: 'Tom', categoryId: 2 };

const kinds = [
  { name: 'memory', open: async (_t: { after(fn: () => void): void }, clock: ManualClock) => openMemoryStore({ clock }) },
  { name: 'file', open: (t: { after(fn: () => void): void }, clock: ManualClock) => openFile(dataFile(), clock) },
];

for (const kind of kinds) {
  test(`${kind.name} store: a key makes one pet; the same payload replays it, another is a mismatch, another scope is its own`, async (t) => {
    const clock = new ManualClock();
    const store = await kind.open(t, clock);
    const first = await store.createIdempotent(REX, idem('k1', REX));
    assert.equal(first.kind, 'created');
    const again = await store.createIdempotent({ status: 'available', categoryId: 1, name: 'Rex' }, idem('k1', REX));
    assert.equal(again.kind, 'replayed');
    assert.ok(first.kind === 'created' && again.kind === 'replayed');
    assert.equal(again.stored.json, first.stored.json, 'the same body, byte for byte');
    assert.deepEqual(await store.createIdempotent(TOM, idem('k1', TOM)), { kind: 'mismatch' });
    const other = await store.createIdempotent(REX, idem('k1', REX, SCOPE_B));
    assert.equal(other.kind, 'created', 'another API key, the same value: its own pet');
    assert.equal(createdId(other), 2);
    assert.equal(store.count, 2);
    assert.equal(store.idempotencyKeys, 2);
    // A create without a key is unaffected.
    assert.equal((await store.create(REX)).pet.id, 3);
    await store.close();
  });

  test(`${kind.name} store: a key expires after the retention, by the store's clock`, async (t) => {
    const clock = new ManualClock();
    const store = await kind.open(t, clock);
    const first = createdId(await store.createIdempotent(REX, idem('k', REX)));
    clock.advance(24 * HOUR - 1);
    assert.equal(createdId(await store.createIdempotent(REX, idem('k', REX))), first, 'still live 1 ms before');
    clock.advance(1);
    const later = await store.createIdempotent(REX, idem('k', REX));
    assert.equal(later.kind, 'created', 'forgotten after 24 hours: a new pet');
    assert.equal(createdId(later), first + 1);
    await store.close();
  });

  test(`${kind.name} store: a reset forgets the keys with the pets`, async (t) => {
    const clock = new ManualClock();
    const store = await kind.open(t, clock);
    await store.createIdempotent(REX, idem('k', REX));
    await store.reset();
    assert.equal(store.idempotencyKeys, 0);
    const after = await store.createIdempotent(REX, idem('k', REX));
    assert.equal(after.kind, 'created');
    assert.equal(createdId(after), 1);
    await store.close();
  });
}

test('memory store: expired keys are swept as new ones arrive, so the table stays bounded', async () => {
  const clock = new ManualClock();
  const store = openMemoryStore({ clock, idempotencyRetentionMs: 1000 });
  for (let i = 0; i < 1000; i++) {
    await store.createIdempotent(REX, idem(`k${i}`, REX));
    clock.advance(10);
  }
  // 1000 ms of retention at one key per 10 ms: about 100 live, never all 1000.
  assert.ok(store.idempotencyKeys <= 102, `${store.idempotencyKeys} keys held`);
  await store.close();
});

test('file store: a repeat while the first is being written is in flight (409); after it, a replay', async (t) => {
  const clock = new ManualClock();
  const store = await openFile(dataFile(), clock);
  const first = store.createIdempotent(REX, idem('k', REX));
  const meanwhile = await store.createIdempotent(REX, idem('k', REX));
  assert.deepEqual(meanwhile, { kind: 'in_flight' });
  assert.deepEqual(await store.createIdempotent(TOM, idem('k', TOM)), { kind: 'in_flight' }, 'whatever the payload');
  const made = await first;
  assert.equal(made.kind, 'created');
  assert.equal((await store.createIdempotent(REX, idem('k', REX))).kind, 'replayed');
  assert.equal(store.count, 1);
  await store.close();
});

test('file store: a create that failed to be written leaves its key free, so the retry is processed anew', async (t) => {
  const clock = new ManualClock();
  let fail = 1;
  const store = await openFile(dataFile(), clock, {
    beforeIo(op: DiskOp) {
      if (op === 'journal-write' && fail-- > 0) throw Object.assign(new Error('simulated ENOSPC'), { code: 'ENOSPC' });
    },
  });
  await assert.rejects(store.createIdempotent(REX, idem('k', REX)), StoreUnavailableError);
  assert.equal(store.count, 0);
  assert.equal(store.idempotencyKeys, 0);
  const retry = await store.createIdempotent(TOM, idem('k', TOM));
  assert.equal(retry.kind, 'created', 'not a mismatch: the failed request stored nothing');
  await store.close();
});

test('file store: the key is in the pet\'s own journal line, and survives a restart', async (t) => {
  const file = dataFile();
  const clock = new ManualClock();
  let store = await openFile(file, clock);
  const made = await store.createIdempotent(REX, idem('key "quoted" \\', REX));
  await store.close();
  const lines = readFileSync(`${file}.journal`, 'utf8').split('\n');
  assert.equal(lines.length, 2, 'one line, and the final newline');
  const record = JSON.parse(lines[0] as string) as Record<string, unknown>;
  assert.deepEqual(record, {
    id: 1, name: 'Rex', categoryId: 1, status: 'available',
    idem: { scope: SCOPE_A, key: 'key "quoted" \\', fp: newPetFingerprint(REX), at: clock.now() },
  });
  clock.advance(HOUR);
  store = await openFile(file, clock);
  const replay = await store.createIdempotent(REX, idem('key "quoted" \\', REX));
  assert.equal(replay.kind, 'replayed');
  assert.ok(made.kind === 'created' && replay.kind === 'replayed');
  assert.equal(replay.stored.json, made.stored.json);
  assert.equal((await store.createIdempotent(TOM, idem('key "quoted" \\', TOM))).kind, 'mismatch');
  assert.equal(store.get(1)?.json, '{"id":1,"name":"Rex","categoryId":1,"status":"available"}', 'the pet has no trace of the key');
  await store.close();
  // Reopened a day later, the key is gone and the pet stays.
  clock.advance(24 * HOUR);
  store = await openFile(file, clock);
  assert.equal(store.idempotencyKeys, 0);
  assert.equal(store.count, 1);
  assert.equal((await store.createIdempotent(TOM, idem('key "quoted" \\', TOM))).kind, 'created');
  await store.close();
});

test('file store: compaction keeps the keys younger than the retention in the snapshot, and drops the rest', async (t) => {
  const file = dataFile();
  const clock = new ManualClock();
  let store = await openFile(file, clock, { compactMinBytes: 1, idempotencyRetentionMs: 10 * HOUR });
  for (let i = 0; i < 5; i++) await store.createIdempotent(REX, idem(`old-${i}`, REX));
  await store.create(TOM); // no key
  clock.advance(6 * HOUR);
  for (let i = 0; i < 5; i++) await store.createIdempotent(TOM, idem(`young-${i}`, TOM));
  clock.advance(5 * HOUR); // the old ones are 11 hours old now, the young ones 5
  // Creates until the journal outgrows the snapshot and a compaction runs past this time.
  let extra = 0;
  const snapshotHasOldKeys = (): boolean => !existsSync(file) || readFileSync(file, 'utf8').includes('"old-0"');
  while (snapshotHasOldKeys()) {
    assert.ok(extra++ < 500, 'a compaction ran');
    await store.create(TOM);
    await until('the compaction is over', () => !existsSync(`${file}.journal.old`));
  }
  await store.close();
  const snapshot = readFileSync(file, 'utf8');
  assert.equal(snapshot.match(/"idem":/g)?.length, 5, snapshot);
  for (let i = 0; i < 5; i++) {
    assert.ok(snapshot.includes(`"key":"young-${i}"`), `young-${i} kept`);
    assert.ok(!snapshot.includes(`"key":"old-${i}"`), `old-${i} dropped`);
  }
  // Each kept key is on its own pet's line.
  const youngLine = snapshot.split('\n').find((l) => l.includes('"young-0"'));
  assert.match(youngLine ?? '', /^\{"id":7,"name":"Tom","categoryId":2,"idem":\{"scope":"a{64}","key":"young-0","fp":"[A-Za-z0-9_-]{43}","at":\d+\}\},$/);
  store = await openFile(file, clock, { idempotencyRetentionMs: 10 * HOUR });
  assert.equal(store.count, 11 + extra);
  assert.equal(store.idempotencyKeys, 5);
  assert.equal(createdId(await store.createIdempotent(TOM, idem('young-3', TOM))), 10);
  assert.equal((await store.createIdempotent(REX, idem('old-3', REX))).kind, 'created');
  await store.close();
});

test('file store: files written before keys existed are read as before, and mix with keyed lines', async (t) => {
  const file = dataFile();
  mkdirSync(dirname(file), { recursive: true });
  const clock = new ManualClock();
  writeFileSync(file, '{"format":"petstore-snapshot","version":1,"nextId":2,"pets":[\n{"id":1,"name":"Old","categoryId":5}\n]}\n');
  const keyed = { id: 3, name: 'Rex', categoryId: 1, status: 'available', idem: { scope: SCOPE_A, key: 'k', fp: newPetFingerprint(REX), at: clock.now() } };
  writeFileSync(`${file}.journal`, `${JSON.stringify({ id: 2, name: 'Plain', categoryId: 1 })}\n${JSON.stringify(keyed)}\n`);
  const store = await openFile(file, clock);
  assert.deepEqual(allPets(store).map((p) => p.json), [
    '{"id":1,"name":"Old","categoryId":5}',
    '{"id":2,"name":"Plain","categoryId":1}',
    '{"id":3,"name":"Rex","categoryId":1,"status":"available"}',
  ]);
  assert.equal(createdId(await store.createIdempotent(REX, idem('k', REX))), 3);
  await store.close();
});

test('file store: a damaged key refuses the start, naming the file and line', async (t) => {
  const clock = new ManualClock();
  const good = { scope: SCOPE_A, key: 'k', fp: newPetFingerprint(REX), at: clock.now() };
  const pet = { id: 1, name: 'Rex', categoryId: 1, status: 'available' };
  const cases: ReadonlyArray<{ name: string; idem: unknown; why: RegExp }> = [
    { name: 'a fingerprint that is not the pet\'s', idem: { ...good, fp: newPetFingerprint(TOM) }, why: /fingerprint that is not the pet's/ },
    { name: 'a scope that is not a digest', idem: { ...good, scope: 'nope' }, why: /"scope"/ },
    { name: 'an empty key', idem: { ...good, key: '' }, why: /"key"/ },
    { name: 'a key with a newline', idem: { ...good, key: 'a\nb' }, why: /"key"/ },
    { name: 'a key of 256 characters', idem: { ...good, key: 'k'.repeat(256) }, why: /"key"/ },
    { name: 'a time that is not an integer', idem: { ...good, at: 1.5 }, why: /"at"/ },
    { name: 'an unknown member', idem: { ...good, extra: 1 }, why: /unexpected fields/ },
    { name: 'not an object', idem: 'k', why: /not an object/ },
  ];
  for (const c of cases) {
    for (const where of ['journal', 'snapshot'] as const) {
      await t.test(`${c.name}, in the ${where}`, async (st) => {
        const file = dataFile();
        const line = JSON.stringify({ ...pet, idem: c.idem });
        if (where === 'journal') writeFileSync(`${file}.journal`, `${line}\n`);
        else writeFileSync(file, `{"format":"petstore-snapshot","version":1,"nextId":2,"pets":[\n${line}\n]}\n`);
        const err = await openFile(file, clock).then(
          async (s) => { await s.close(); return undefined; },
          (e: unknown) => e,
        );
        assert.ok(err instanceof StoreOpenError, `refused: ${String(err)}`);
        assert.match(err.message, /line 1|line 2/);
        assert.match(err.message, c.why);
      });
    }
  }
});

test('memory store: a restore being prepared holds no object per key (under 60 heap bytes a key: its index entry, about 37)', async () => {
  // An object per key (with its boxed time) made the young generation's collector copy them
  // all during a restore; the ids and times are in typed arrays, outside that generation.
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const clock = new ManualClock(Date.UTC(2026, 0, 1));
  const store = openMemoryStore({ clock });
  for (let i = 0; i < 50_000; i += 1000) {
    await Promise.all(Array.from({ length: 1000 }, (_, j) => {
      const pet: NewPet = { name: `pet ${i + j}`, categoryId: 1 };
      return store.createIdempotent(pet, idem(`key-${i + j}`, pet));
    }));
  }
  assert.ok(canSnapshot(store));
  const snapshot = (await store.captureSnapshot()) as LocalSnapshot;
  gc();
  gc();
  const before = process.memoryUsage().heapUsed;
  const prepared = await prepareRestore(snapshot, clock.now());
  // The lists share the snapshot's full segments; only each one's last, partial segment is copied.
  const l = prepared.lists;
  const petArrays = [l.count, l.byStatus.available.count, l.byStatus.pending.count, l.byStatus.sold.count].reduce((sum, n) => sum + (n % SEGMENT_SIZE) * 8, 0);
  gc();
  gc();
  const perKey = (process.memoryUsage().heapUsed - before - petArrays) / 50_000;
  assert.equal(prepared.keys.size, 50_000);
  assert.ok(perKey < 60, `${perKey.toFixed(1)} heap bytes a key`);
});
