// Tests of the pet store: the in-memory index and both stores, the on-disk format, locking,
// recovery from disk errors. The crash test (SIGKILL of a real writer) is test/store/file/crash.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  IdsExhaustedError,
  openFileStore,
  openMemoryStore,
  StoreInputError,
  StoreOpenError,
  StoreUnavailableError,
} from '../../src/store/index.js';
import type { DiskOp, FileStoreOptions, LocalPetStore, StoredPet } from '../../src/store/index.js';
import { allPets } from '../support/bundle.js';
import { formatHolder, thisProcess } from '../../src/store/file/lock-holder.js';
import type { LogLevel, Logger, NewPet, PetStatus } from '../../src/core/types.js';

// ---------------------------------------------------------------- helpers

interface LogEntry {
  level: LogLevel;
  msg: string;
  fields: Record<string, unknown> | undefined;
}

function testLogger(): Logger & { entries: LogEntry[] } {
  const entries: LogEntry[] = [];
  return { entries, log: (level, msg, fields) => void entries.push({ level, msg, fields }) };
}

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'petstore-'));
}

/** A data file path in a fresh directory, and the directory removed after the test. */
function dataFile(t: { after(fn: () => void): void }): string {
  const dir = tempDir();
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return join(dir, 'data', 'pets.json');
}

function open(file: string, extra: Partial<FileStoreOptions> = {}): Promise<LocalPetStore> {
  return openFileStore(file, { logger: testLogger(), ...extra });
}

const STATUSES: Array<PetStatus | undefined> = ['available', 'pending', 'sold', undefined];

function newPet(i: number): NewPet {
  const status = STATUSES[i % STATUSES.length];
  return status === undefined ? { name: `pet ${i}`, categoryId: i % 7 } : { name: `pet ${i}`, categoryId: i % 7, status };
}

function ids(pets: StoredPet[]): number[] {
  return pets.map((p) => p.pet.id);
}

async function createMany(store: LocalPetStore, n: number, from = 0): Promise<StoredPet[]> {
  return Promise.all(Array.from({ length: n }, (_, i) => store.create(newPet(from + i))));
}


function ioError(code: string): Error {
  return Object.assign(new Error(`simulated ${code}`), { code });
}

/** A beforeIo hook that fails the planned operations, each the given number of times. */
function faults(plan: Partial<Record<DiskOp, number>> = {}): { hook(op: DiskOp): void; arm(more: Partial<Record<DiskOp, number>>): void } {
  const left: Partial<Record<DiskOp, number>> = { ...plan };
  return {
    hook(op) {
      const n = left[op] ?? 0;
      if (n > 0) {
        left[op] = n - 1;
        throw ioError(op === 'journal-sync' ? 'EIO' : 'ENOSPC');
      }
    },
    arm(more) {
      Object.assign(left, more);
    },
  };
}

/** The pid of a process that has exited. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '0']);
  await new Promise((done) => child.on('exit', done));
  assert.ok(child.pid !== undefined);
  return child.pid;
}

const snapshotText = (nextId: number, pets: object[]): string =>
  JSON.stringify({ format: 'petstore-snapshot', version: 1, nextId, pets });

const line = (o: object): string => `${JSON.stringify(o)}\n`;

// ---------------------------------------------------------------- both stores

const stores: Array<{ name: string; open(t: { after(fn: () => void): void }): Promise<LocalPetStore> }> = [
  { name: 'memory', open: async () => openMemoryStore() },
  { name: 'file', open: (t) => open(dataFile(t)) },
];

for (const kind of stores) {
  test(`${kind.name} store: ids are sequential from 1 and pets read back`, async (t) => {
    const store = await kind.open(t);
    const created = await createMany(store, 5);
    assert.deepEqual(ids(created), [1, 2, 3, 4, 5]);
    assert.equal(store.count, 5);
    assert.deepEqual(store.get(2)?.pet, { id: 2, name: 'pet 1', categoryId: 1, status: 'pending' });
    assert.equal(store.get(4)?.json, '{"id":4,"name":"pet 3","categoryId":3}');
    assert.equal(store.get(1)?.json, JSON.stringify(store.get(1)?.pet));
    for (const missing of [0, 6, -1, 2.5, Number.MAX_SAFE_INTEGER]) assert.equal(store.get(missing), undefined);
    await store.close();
  });

  test(`${kind.name} store: list filters, pages and limits`, async (t) => {
    const store = await kind.open(t);
    await createMany(store, 20); // status cycles available, pending, sold, none
    const cases: Array<{ q: Parameters<LocalPetStore['list']>[0]; want: number[] }> = [
      { q: { limit: 5 }, want: [1, 2, 3, 4, 5] },
      { q: { limit: 3, afterId: 17 }, want: [18, 19, 20] },
      { q: { limit: 100, afterId: 20 }, want: [] },
      { q: { limit: 2, afterId: 0 }, want: [1, 2] },
      { q: { limit: 2, afterId: -5 }, want: [1, 2] },
      { q: { status: 'available', limit: 100 }, want: [1, 5, 9, 13, 17] },
      { q: { status: 'pending', limit: 2, afterId: 2 }, want: [6, 10] },
      { q: { status: 'sold', limit: 10, afterId: 15 }, want: [19] },
      { q: { status: 'sold', limit: 10, afterId: 19 }, want: [] },
      { q: { status: 'available', limit: 1, afterId: 4 }, want: [5] },
    ];
    for (const c of cases) assert.deepEqual(ids(store.list(c.q)), c.want, JSON.stringify(c.q));
    for (const p of store.list({ status: 'pending', limit: 100 })) assert.equal(p.pet.status, 'pending');
    await store.close();
  });

  test(`${kind.name} store: a pet is visible only once create resolves`, async (t) => {
    const store = await kind.open(t);
    const pending = store.create(newPet(0));
    if (kind.name === 'file') assert.equal(store.count, 0);
    const created = await pending;
    assert.equal(store.get(created.pet.id)?.json, created.json);
    await store.close();
  });

  test(`${kind.name} store: seed honours good ids and refuses bad ones`, async (t) => {
    const store = await kind.open(t);
    const seeded = await store.seed([{ ...newPet(0) }, { ...newPet(1), id: 10 }, { ...newPet(2) }, { ...newPet(3), id: 20 }]);
    assert.deepEqual(ids(seeded), [1, 10, 11, 20]);
    assert.equal((await store.create(newPet(4))).pet.id, 21);
    const bad: Array<{ name: string; pets: Array<NewPet & { id?: number }> }> = [
      { name: 'id not above existing', pets: [{ ...newPet(0), id: 21 }] },
      { name: 'id zero', pets: [{ ...newPet(0), id: 0 }] },
      { name: 'fractional id', pets: [{ ...newPet(0), id: 30.5 }] },
      { name: 'unsafe id', pets: [{ ...newPet(0), id: 2 ** 60 }] },
      { name: 'descending ids', pets: [{ ...newPet(0), id: 40 }, { ...newPet(1), id: 30 }] },
      { name: 'assigned id collides', pets: [{ ...newPet(0), id: 40 }, { ...newPet(1) }, { ...newPet(2), id: 41 }] },
    ];
    for (const c of bad) await assert.rejects(store.seed(c.pets), StoreInputError, c.name);
    assert.equal(store.count, 5, 'a refused seed adds nothing');
    assert.deepEqual(await store.seed([]), []);
    await store.close();
  });

  test(`${kind.name} store: reset empties and ids restart at 1`, async (t) => {
    const store = await kind.open(t);
    await createMany(store, 3);
    await store.reset();
    assert.equal(store.count, 0);
    assert.deepEqual(store.list({ limit: 10 }), []);
    assert.equal((await store.create(newPet(9))).pet.id, 1);
    await store.close();
  });

  test(`${kind.name} store: ids stop at the safe integer range, refused as exhausted (not as a store that may recover)`, async (t) => {
    const store = await kind.open(t);
    await store.seed([{ ...newPet(0), id: Number.MAX_SAFE_INTEGER }]);
    await assert.rejects(store.create(newPet(1)), (err: unknown) => err instanceof IdsExhaustedError && !(err instanceof StoreUnavailableError) && /id space exhausted/.test(err.message));
    await assert.rejects(store.seed([newPet(1)]), IdsExhaustedError);
    assert.equal(store.count, 1);
    await store.close();
  });

  test(`${kind.name} store: close is idempotent and later writes are refused`, async (t) => {
    const store = await kind.open(t);
    await createMany(store, 2);
    await Promise.all([store.close(), store.close()]);
    await store.close();
    await assert.rejects(store.create(newPet(0)), StoreUnavailableError);
    assert.equal(store.count, 2, 'reads still work');
  });
}

test('memory store writes nothing to disk', async (t) => {
  const dir = tempDir();
  const before = process.cwd();
  t.after(() => {
    process.chdir(before);
    rmSync(dir, { recursive: true, force: true });
  });
  process.chdir(dir);
  const store = openMemoryStore();
  await createMany(store, 10);
  await store.seed([newPet(1)]);
  await store.reset();
  await store.close();
  assert.deepEqual(readdirSync(dir), []);
});

// ---------------------------------------------------------------- file store: durability

test('file store: pets and ids survive close and reopen; ids are never reused', async (t) => {
  const file = dataFile(t);
  let store = await open(file);
  const first = await createMany(store, 3);
  await store.seed([{ ...newPet(3), id: 100 }]);
  await store.close();

  store = await open(file);
  assert.equal(store.count, 4);
  for (const p of first) assert.equal(store.get(p.pet.id)?.json, p.json);
  assert.equal((await store.create(newPet(4))).pet.id, 101);
  await store.close();

  store = await open(file);
  assert.deepEqual(ids(allPets(store)), [1, 2, 3, 100, 101]);
  await store.close();
});

test('file store: a reset is durable', async (t) => {
  const file = dataFile(t);
  let store = await open(file);
  await createMany(store, 5);
  await store.reset();
  await createMany(store, 2, 50);
  await store.close();
  store = await open(file);
  assert.deepEqual(allPets(store).map((p) => p.pet.name), ['pet 50', 'pet 51']);
  assert.equal((await store.create(newPet(0))).pet.id, 3);
  await store.close();
});

test('file store: concurrent creates share one write and fdatasync', async (t) => {
  const flushes: number[] = [];
  const store = await open(dataFile(t), { onFlush: (n) => flushes.push(n) });
  const created = await createMany(store, 64);
  assert.deepEqual(ids(created), Array.from({ length: 64 }, (_, i) => i + 1));
  assert.deepEqual(flushes, [64]);

  // Creates that arrive while a flush is in flight wait and share the next one.
  flushes.length = 0;
  const first = store.create(newPet(0));
  await new Promise((done) => setImmediate(done)); // the first flush has started
  const more = createMany(store, 30);
  await Promise.all([first, more]);
  assert.deepEqual(flushes, [1, 30]);
  await store.close();
});

// A killed process keeps what it wrote in the page cache, so no crash test can tell a journal
// that syncs from one that does not: the open file's flags are checked instead (Linux shows
// them in /proc/self/fdinfo). O_DSYNC makes each write durable before it returns.
test('file store: the journal is written O_DSYNC, also when reopened and after a rotation', { skip: process.platform !== 'linux' && 'reads /proc/self/fdinfo (Linux only)' }, async (t) => {
  const O_DSYNC = 0o10000;
  const file = dataFile(t);
  const journalFlags = (): number[] => {
    const flags: number[] = [];
    for (const fd of readdirSync('/proc/self/fd')) {
      let target = '';
      try {
        target = readlinkSync(`/proc/self/fd/${fd}`);
      } catch {
        continue; // closed since the listing
      }
      if (!target.endsWith('pets.json.journal')) continue;
      const line = readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8').split('\n').find((l) => l.startsWith('flags:'));
      flags.push(Number.parseInt((line ?? '').split(/\s+/)[1] ?? '', 8));
    }
    return flags;
  };
  const assertDsync = (when: string): void => {
    const flags = journalFlags();
    assert.equal(flags.length, 1, `${when}: one open journal`);
    assert.ok(((flags[0] ?? 0) & O_DSYNC) !== 0, `${when}: journal flags ${(flags[0] ?? 0).toString(8)} lack O_DSYNC`);
  };
  let store = await open(file);
  await createMany(store, 10);
  assertDsync('new journal');
  await store.close();
  store = await open(file);
  assertDsync('reopened journal');
  await store.close();
  // Compaction rotates the journal to .old and creates a new one (as a rebuild does); it
  // runs in the background, and is over once the snapshot exists and .old is gone.
  const fresh = dataFile(t);
  store = await open(fresh, { compactMinBytes: 1 });
  await createMany(store, 10);
  for (let i = 0; i < 500 && (!existsSync(fresh) || existsSync(`${fresh}.journal.old`)); i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(existsSync(fresh) && !existsSync(`${fresh}.journal.old`), 'a compaction ran');
  assertDsync('journal after a rotation');
  await store.create(newPet(99));
  await store.close();
});

test('file store: the files are JSON lines and a snapshot of the documented shape', async (t) => {
  const file = dataFile(t);
  const store = await open(file, { compactMinBytes: 1 });
  await createMany(store, 3);
  await store.close();
  const doc = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  assert.equal(doc['format'], 'petstore-snapshot');
  assert.equal(doc['version'], 1);
  assert.equal(doc['nextId'], 4);
  assert.deepEqual(doc['pets'], [
    { id: 1, name: 'pet 0', categoryId: 0, status: 'available' },
    { id: 2, name: 'pet 1', categoryId: 1, status: 'pending' },
    { id: 3, name: 'pet 2', categoryId: 2, status: 'sold' },
  ]);
  assert.equal(readFileSync(`${file}.journal`, 'utf8'), '');
  assert.equal(existsSync(`${file}.journal.old`), false);
  assert.equal(existsSync(`${file}.lock`), false, 'close releases the lock');
});

test('file store: compaction keeps every pet and shrinks the journal', async (t) => {
  const file = dataFile(t);
  const logger = testLogger();
  let store = await openFileStore(file, { logger, compactMinBytes: 2000 });
  const created: StoredPet[] = [];
  for (let round = 0; round < 20; round++) created.push(...(await createMany(store, 25, round * 25)));
  await store.close();
  assert.ok(logger.entries.some((e) => e.msg === 'data file compacted'));
  const journalBytes = statSync(`${file}.journal`).size;
  const snapshotBytes = statSync(file).size;
  const allRecords = created.reduce((n, p) => n + p.json.length + 1, 0);
  // The journal is compacted each time it outgrows the snapshot, so it ends at most one
  // batch (25 records, under 2000 bytes) past the snapshot's size.
  assert.ok(journalBytes <= snapshotBytes + 2000, `journal ${journalBytes} bytes, snapshot ${snapshotBytes}`);
  assert.ok(journalBytes < allRecords * 0.6, `journal ${journalBytes} bytes of ${allRecords} written`);
  assert.ok(snapshotBytes > allRecords / 3, `snapshot ${snapshotBytes} bytes`);
  store = await open(file);
  assert.equal(store.count, 500);
  for (const p of created) assert.equal(store.get(p.pet.id)?.json, p.json);
  await store.close();
});

test('file store: a failed compaction is retried and loses nothing', async (t) => {
  const file = dataFile(t);
  let store = await open(file, { compactMinBytes: 1000, beforeIo: faults({ 'snapshot-write': 2, rotate: 1 }).hook });
  for (let round = 0; round < 30; round++) await createMany(store, 10, round * 10);
  await store.close();
  assert.equal(existsSync(`${file}.journal.old`), false);
  store = await open(file);
  assert.deepEqual(ids(allPets(store)), Array.from({ length: 300 }, (_, i) => i + 1));
  await store.close();
});

test('file store: a reset makes a large snapshot go away at the next compaction', async (t) => {
  const file = dataFile(t);
  let store = await open(file, { compactMinBytes: 1000 });
  await store.seed(Array.from({ length: 500 }, (_, i) => newPet(i)));
  await store.close();
  assert.ok(statSync(file).size > 20_000, 'the 500 pets went to the snapshot');
  store = await open(file, { compactMinBytes: 1000 });
  await store.reset();
  await createMany(store, 1);
  await store.close();
  assert.ok(statSync(file).size < 300, 'the snapshot no longer holds the 500 pets');
  store = await open(file);
  assert.equal(store.count, 1);
  await store.close();
});

// ---------------------------------------------------------------- file store: damaged files

const corruptSnapshots: Array<{ name: string; text: string; says: RegExp }> = [
  { name: 'not JSON', text: '{"format":"petstore-snapshot",', says: /not valid JSON/ },
  { name: 'empty file', text: '', says: /not valid JSON/ },
  { name: 'an array', text: '[]', says: /not a JSON object/ },
  { name: 'wrong format', text: JSON.stringify({ format: 'other', version: 1, nextId: 1, pets: [] }), says: /format/ },
  { name: 'future version', text: JSON.stringify({ format: 'petstore-snapshot', version: 2, nextId: 1, pets: [] }), says: /version/ },
  { name: 'no pets', text: JSON.stringify({ format: 'petstore-snapshot', version: 1, nextId: 1 }), says: /pets/ },
  { name: 'bad nextId', text: snapshotText(0, []), says: /nextId/ },
  { name: 'pet without name', text: snapshotText(5, [{ id: 1, categoryId: 1 }]), says: /index 0.*name/ },
  { name: 'bad status', text: snapshotText(5, [{ id: 1, name: 'a', categoryId: 1, status: 'lost' }]), says: /status/ },
  { name: 'extra field', text: snapshotText(5, [{ id: 1, name: 'a', categoryId: 1, tag: 'x' }]), says: /unexpected/ },
  {
    name: 'ids out of order',
    text: snapshotText(5, [{ id: 2, name: 'a', categoryId: 1 }, { id: 1, name: 'b', categoryId: 1 }]),
    says: /order/,
  },
  { name: 'id not below nextId', text: snapshotText(2, [{ id: 2, name: 'a', categoryId: 1 }]), says: /nextId/ },
];

for (const c of corruptSnapshots) {
  test(`file store: a corrupt snapshot (${c.name}) is refused and left untouched`, async (t) => {
    const file = dataFile(t);
    mkdirSync(join(file, '..'), { recursive: true });
    writeFileSync(file, c.text);
    await assert.rejects(open(file), (err: unknown) => {
      assert.ok(err instanceof StoreOpenError);
      assert.equal(err.file, file);
      assert.ok(err.message.includes(file), err.message);
      assert.match(err.message, c.says);
      return true;
    });
    assert.equal(readFileSync(file, 'utf8'), c.text);
    assert.deepEqual(readdirSync(join(file, '..')), ['pets.json'], 'no journal, no lock left behind');
  });
}

const tornTails: Array<{ name: string; tail: string }> = [
  { name: 'cut mid-record', tail: '{"id":4,"name":"pet' },
  { name: 'cut inside a multi-byte character', tail: '{"id":4,"name":"caf\xC3' },
  { name: 'complete JSON but no newline', tail: '{"id":4,"name":"x","categoryId":1}' },
];

for (const c of tornTails) {
  test(`file store: a torn last journal line (${c.name}) is dropped and cut away`, async (t) => {
    const file = dataFile(t);
    mkdirSync(join(file, '..'), { recursive: true });
    const good = [1, 2, 3].map((id) => line({ id, name: `pet ${id}`, categoryId: 1 })).join('');
    writeFileSync(`${file}.journal`, Buffer.concat([Buffer.from(good), Buffer.from(c.tail, 'latin1')]));
    const logger = testLogger();
    let store = await openFileStore(file, { logger });
    assert.equal(store.count, 3);
    assert.ok(logger.entries.some((e) => e.level === 'warn' && /torn/.test(e.msg)));
    assert.equal(readFileSync(`${file}.journal`, 'utf8'), good, 'the torn bytes are truncated before any append');
    assert.equal((await store.create(newPet(4))).pet.id, 4);
    await store.close();
    store = await open(file);
    assert.deepEqual(ids(allPets(store)), [1, 2, 3, 4]);
    await store.close();
  });
}

const damagedJournals: Array<{ name: string; text: string; line: number }> = [
  { name: 'garbage in the middle', text: `${line({ id: 1, name: 'a', categoryId: 1 })}xx\n${line({ id: 2, name: 'b', categoryId: 1 })}`, line: 2 },
  { name: 'an empty line', text: `${line({ id: 1, name: 'a', categoryId: 1 })}\n${line({ id: 2, name: 'b', categoryId: 1 })}`, line: 2 },
  { name: 'a valid JSON but invalid record', text: `${line({ id: 1, name: 'a', categoryId: 1 })}${line({ id: 'x' })}${line({ id: 3, name: 'b', categoryId: 1 })}`, line: 2 },
  { name: 'an invalid last record', text: `${line({ id: 1, name: 'a', categoryId: 1 })}${line({ id: 2, name: 5, categoryId: 1 })}`, line: 2 },
  { name: 'an unknown operation', text: `${line({ op: 'drop' })}${line({ id: 1, name: 'a', categoryId: 1 })}`, line: 1 },
  // A line that ends in a newline was written whole: damage there is not a torn write.
  { name: 'an unparseable last line that ends in a newline', text: `${line({ id: 1, name: 'a', categoryId: 1 })}{"id":2,"na\n`, line: 2 },
];

for (const c of damagedJournals) {
  test(`file store: a damaged journal (${c.name}) is refused with its line number`, async (t) => {
    const file = dataFile(t);
    mkdirSync(join(file, '..'), { recursive: true });
    writeFileSync(`${file}.journal`, c.text);
    await assert.rejects(open(file), (err: unknown) => {
      assert.ok(err instanceof StoreOpenError);
      assert.ok(err.message.includes(`${file}.journal`), err.message);
      assert.match(err.message, new RegExp(`line ${c.line}\\b`));
      return true;
    });
    assert.equal(readFileSync(`${file}.journal`, 'utf8'), c.text);
    assert.equal(existsSync(`${file}.lock`), false);
  });
}

// Every state a crash can leave between rotating the journal, renaming the new snapshot
// and unlinking `.old` must replay to what was acknowledged.
const p = (id: number, name: string): object => ({ id, name, categoryId: 1 });
const crashStates: Array<{ name: string; snapshot?: string; old?: string; journal?: string; want: string[] }> = [
  {
    name: 'rotated, snapshot not yet renamed',
    snapshot: snapshotText(2, [p(1, 'a')]),
    old: line(p(2, 'b')) + line(p(3, 'c')),
    journal: line(p(4, 'd')),
    want: ['a', 'b', 'c', 'd'],
  },
  {
    name: 'snapshot renamed, .old not yet unlinked',
    snapshot: snapshotText(4, [p(1, 'a'), p(2, 'b'), p(3, 'c')]),
    old: line(p(2, 'b')) + line(p(3, 'c')),
    journal: line(p(4, 'd')),
    want: ['a', 'b', 'c', 'd'],
  },
  {
    name: 'a reset inside the covered journal',
    snapshot: snapshotText(3, [p(1, 'x'), p(2, 'y')]),
    old: line(p(1, 'a')) + line(p(2, 'b')) + line(p(3, 'c')) + line({ op: 'reset' }) + line(p(1, 'x')) + line(p(2, 'y')),
    journal: line(p(3, 'z')),
    want: ['x', 'y', 'z'],
  },
  {
    name: 'a reset after the snapshot',
    snapshot: snapshotText(3, [p(1, 'a'), p(2, 'b')]),
    journal: line(p(3, 'c')) + line({ op: 'reset' }) + line(p(1, 'n')),
    want: ['n'],
  },
  {
    name: 'snapshot from a rebuild, journal not yet emptied',
    snapshot: snapshotText(3, [p(1, 'a'), p(2, 'b')]),
    journal: line(p(1, 'a')) + line(p(2, 'b')),
    want: ['a', 'b'],
  },
];

for (const c of crashStates) {
  test(`file store: replay after a crash (${c.name})`, async (t) => {
    const file = dataFile(t);
    mkdirSync(join(file, '..'), { recursive: true });
    if (c.snapshot !== undefined) writeFileSync(file, c.snapshot);
    if (c.old !== undefined) writeFileSync(`${file}.journal.old`, c.old);
    if (c.journal !== undefined) writeFileSync(`${file}.journal`, c.journal);
    let store = await open(file, { compactMinBytes: 1 });
    assert.deepEqual(allPets(store).map((x) => x.pet.name), c.want);
    const next = await store.create(newPet(0));
    assert.equal(next.pet.id, c.want.length + 1);
    await store.close(); // compacts (tiny threshold), which must keep the same content
    store = await open(file);
    assert.deepEqual(allPets(store).map((x) => x.pet.name), [...c.want, 'pet 0']);
    await store.close();
  });
}

// ---------------------------------------------------------------- file store: lock

/** A lock file as a holder of this boot and pid namespace writes it. */
function lockOf(pid: number): string {
  return formatHolder({ ...thisProcess(), pid, token: 'test' });
}

test('file store: a data file locked by a live process is refused', async (t) => {
  const file = dataFile(t);
  const sleeper = spawn('sleep', ['30']);
  t.after(() => sleeper.kill('SIGKILL'));
  mkdirSync(join(file, '..'), { recursive: true });
  writeFileSync(`${file}.lock`, lockOf(sleeper.pid ?? 0));
  await assert.rejects(open(file), (err: unknown) => {
    assert.ok(err instanceof StoreOpenError);
    assert.equal(err.message, `Data file ${file} is in use by process ${sleeper.pid}.`);
    return true;
  });
  assert.equal(readFileSync(`${file}.lock`, 'utf8'), lockOf(sleeper.pid ?? 0), 'the lock is left alone');
});

test('file store: a second store on the same file in this process is refused', async (t) => {
  const file = dataFile(t);
  const store = await open(file);
  await assert.rejects(open(file), new RegExp(`in use by process ${process.pid} \\(this process\\)`));
  await store.close();
  const again = await open(file);
  await again.close();
});

test('file store: a stale lock from a dead process is taken over with a warning', async (t) => {
  const file = dataFile(t);
  mkdirSync(join(file, '..'), { recursive: true });
  const pid = await deadPid();
  writeFileSync(`${file}.lock`, lockOf(pid));
  const logger = testLogger();
  const store = await openFileStore(file, { logger });
  assert.ok(logger.entries.some((e) => e.level === 'warn' && e.fields?.['stalePid'] === pid));
  assert.equal(JSON.parse(readFileSync(`${file}.lock`, 'utf8')).pid, process.pid);
  await store.close();
  assert.equal(existsSync(`${file}.lock`), false);
});

test('file store: a stale lock holding our own pid (a container restart, pid 1 again) is taken over', async (t) => {
  const file = dataFile(t);
  mkdirSync(join(file, '..'), { recursive: true });
  writeFileSync(`${file}.lock`, lockOf(process.pid));
  const store = await openFileStore(file, { logger: testLogger() });
  // ... while a second open in this same process is still refused.
  await assert.rejects(open(file), new RegExp(`in use by process ${process.pid}`));
  await store.close();
});

test('file store: a directory that cannot be created is refused by name', async (t) => {
  const dir = tempDir();
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'blocker'), 'a file, not a directory');
  const file = join(dir, 'blocker', 'pets.json');
  await assert.rejects(open(file), (err: unknown) => err instanceof StoreOpenError && err.message.includes(file));
});

test('file store: an unreadable snapshot is refused by name', async (t) => {
  const file = dataFile(t);
  mkdirSync(file, { recursive: true }); // a directory where the snapshot should be
  await assert.rejects(open(file), (err: unknown) => err instanceof StoreOpenError && err.message.includes(file));
});

// ---------------------------------------------------------------- file store: disk errors

const diskErrors: Array<{ name: string; fail: Partial<Record<DiskOp, number>> }> = [
  { name: 'write fails (ENOSPC)', fail: { 'journal-write': 1 } },
  { name: 'fdatasync fails (EIO)', fail: { 'journal-sync': 1 } },
  { name: 'several failures in a row', fail: { 'journal-write': 2, 'journal-sync': 1 } },
];

for (const c of diskErrors) {
  test(`file store: ${c.name}: the batch gets StoreUnavailableError and the store recovers`, async (t) => {
    const file = dataFile(t);
    const disk = faults();
    let store = await open(file, { beforeIo: disk.hook });
    const kept = await createMany(store, 3);
    disk.arm(c.fail);
    const failures = Object.values(c.fail).reduce((a, b) => a + b, 0);
    for (let i = 0; i < failures; i++) {
      const batch = await Promise.allSettled([store.create({ name: 'lost', categoryId: 1 }), store.create({ name: 'lost', categoryId: 2 })]);
      for (const r of batch) assert.ok(r.status === 'rejected' && r.reason instanceof StoreUnavailableError);
      assert.equal(store.count, 3, 'nothing of a failed batch becomes visible');
    }
    const after = await store.create(newPet(3));
    assert.equal(after.pet.id, 4, 'ids of a failed batch are given out again');
    await store.close();
    assert.ok(!readFileSync(`${file}.journal`, 'utf8').includes('lost'), 'failed records are cut from the journal');
    store = await open(file);
    assert.deepEqual(allPets(store).map((x) => x.json), [...kept, after].map((x) => x.json));
    await store.close();
  });
}

test('file store: a removed data directory fails writes until it can be rewritten, losing nothing', async (t) => {
  const file = dataFile(t);
  const dir = join(file, '..');
  const logger = testLogger();
  let store = await openFileStore(file, { logger });
  const kept = await createMany(store, 5);

  rmSync(dir, { recursive: true }); // the open journal now writes to a file no restart would see
  await assert.rejects(store.create(newPet(5)), StoreUnavailableError);
  writeFileSync(dir, 'in the way'); // the directory cannot even be recreated
  await assert.rejects(store.create(newPet(6)), StoreUnavailableError);
  assert.equal(store.count, 5);

  rmSync(dir); // the disk "recovers"
  const next = await store.create(newPet(7));
  assert.equal(next.pet.id, 6);
  assert.ok(logger.entries.some((e) => e.msg === 'data file rewritten after a disk error'));
  await store.close();

  store = await open(file);
  assert.deepEqual(allPets(store).map((x) => x.json), [...kept, next].map((x) => x.json));
  await store.close();
});

test('file store: close rewrites a removed directory so acknowledged pets stay on disk', async (t) => {
  const file = dataFile(t);
  let store = await open(file);
  const kept = await createMany(store, 4);
  rmSync(join(file, '..'), { recursive: true });
  await assert.rejects(store.create(newPet(9)), StoreUnavailableError);
  await store.close();
  store = await open(file);
  assert.deepEqual(allPets(store).map((x) => x.json), kept.map((x) => x.json));
  await store.close();
});
