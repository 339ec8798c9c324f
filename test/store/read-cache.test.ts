// The read cache in front of the PostgreSQL store (read-cache.ts), against an in-process store
// that answers like a database (promises) and counts what reaches it: what is kept (pets, full
// pages proven by a further pet), what is not (unknown ids, partial pages), and what empties it
// (a new store generation, an unknown one, a reset or seed), including reads that were under
// way when the generation changed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StoreGeneration } from '../../src/core/index.js';
import { ReadCachedStore, hasPageVersion, openMemoryStore, type ListQuery, type PetStore, type SeedPet, type StoredPet } from '../../src/store/index.js';
import type { NewPet } from '../../src/core/types.js';
import { petBytes } from '../../src/store/postgres/kept-reads.js';

/** The memory store behind promises, counting reads; `hold` parks the next read until released. */
class CountingStore implements PetStore {
  readonly inner = openMemoryStore();
  reads = 0;
  hold: Promise<void> | undefined;
  async get(id: number): Promise<StoredPet | undefined> {
    this.reads++;
    const r = this.inner.get(id);
    if (this.hold) await this.hold;
    return r;
  }
  async list(q: ListQuery): Promise<StoredPet[]> {
    this.reads++;
    const r = this.inner.list(q);
    if (this.hold) await this.hold;
    return r;
  }
  create(input: NewPet): Promise<StoredPet> { return this.inner.create(input); }
  // No test here creates through the cache (postgres/read-cache.test.ts does, on PostgreSQL).
  watchCreates(): void {}
  seed(pets: ReadonlyArray<SeedPet>): Promise<StoredPet[]> { return this.inner.seed(pets); }
  reset(): Promise<void> { return this.inner.reset(); }
  close(): Promise<void> { return this.inner.close(); }
}

function setup(opts: { maxBytes?: number } = {}): { db: CountingStore; gen: StoreGeneration; cache: ReadCachedStore; advances: string[] } {
  const db = new CountingStore();
  const advances: string[] = [];
  let n = 0;
  const gen = new StoreGeneration(async () => {
    const token = `e:${++n}`;
    advances.push(token);
    return token;
  });
  gen.observe('e:0');
  return { db, gen, cache: new ReadCachedStore(db, gen, opts), advances };
}

async function seedPets(db: CountingStore, count: number): Promise<void> {
  await db.inner.seed(Array.from({ length: count }, (_, i) => ({ name: `p${i + 1}`, categoryId: 1, status: i % 2 === 0 ? 'available' as const : 'sold' as const })));
}

const ids = (page: StoredPet[]): number[] => page.map((s) => s.pet.id);

test('a pet read once is answered from memory; an unknown id always asks the store', async () => {
  const { db, cache } = setup();
  await seedPets(db, 3);
  assert.equal((await cache.get(2))?.pet.name, 'p2');
  assert.equal((await cache.get(2))?.pet.name, 'p2');
  assert.equal(db.reads, 1);
  assert.equal(await cache.get(9), undefined);
  await db.inner.create({ name: 'late', categoryId: 1 });
  await db.inner.create({ name: 'later', categoryId: 1 });
  await db.inner.create({ name: 'latest', categoryId: 1 });
  await db.inner.create({ name: 'nine', categoryId: 1 });
  await db.inner.create({ name: 'nine', categoryId: 1 });
  await db.inner.create({ name: 'nine', categoryId: 1 });
  assert.equal((await cache.get(9))?.pet.id, 9, 'an id unknown before is found once it exists');
  assert.equal(db.reads, 3);
});

test('a full answer is kept (its last pet proves nothing can appear before it); a shorter one always asks the store', async () => {
  const { db, cache } = setup();
  await seedPets(db, 5);
  assert.deepEqual(ids(await cache.list({ limit: 2 })), [1, 2]);
  assert.deepEqual(ids(await cache.list({ limit: 2 })), [1, 2]);
  assert.equal(db.reads, 1, 'the full answer was kept');
  assert.deepEqual(ids(await cache.list({ limit: 2, afterId: 4 })), [5]);
  assert.deepEqual(ids(await cache.list({ limit: 2, afterId: 4 })), [5]);
  assert.equal(db.reads, 3, 'the short answer asked twice');
  await db.inner.create({ name: 'p6', categoryId: 1, status: 'sold' });
  assert.deepEqual(ids(await cache.list({ limit: 2, afterId: 4 })), [5, 6], 'and grew');
  // A status filter is its own answer.
  assert.deepEqual(ids(await cache.list({ limit: 3, status: 'sold' })), [2, 4, 6]);
  assert.deepEqual(ids(await cache.list({ limit: 3, status: 'sold' })), [2, 4, 6]);
  assert.equal(db.reads, 5);
  assert.deepEqual(ids(await cache.list({ limit: 4, status: 'sold' })), [2, 4, 6]);
  assert.deepEqual(ids(await cache.list({ limit: 4, status: 'sold' })), [2, 4, 6]);
  assert.equal(db.reads, 7, 'three of four: not kept');
  // Pets of a kept answer answer get() from memory too.
  assert.equal((await cache.get(1))?.pet.id, 1);
  assert.equal(db.reads, 7);
});

test('a caller that shortens the answer it got (the API drops its one extra pet) does not shorten what is kept', async () => {
  const { db, cache } = setup();
  await seedPets(db, 5);
  const first = await cache.list({ limit: 3 });
  first.length = 2;
  const second = await cache.list({ limit: 3 });
  assert.deepEqual(ids(second), [1, 2, 3]);
  second.length = 1;
  assert.deepEqual(ids(await cache.list({ limit: 3 })), [1, 2, 3]);
  assert.equal(db.reads, 1);
});

test('a new generation empties the cache before the next read', async () => {
  const { db, gen, cache } = setup();
  await seedPets(db, 5);
  await cache.list({ limit: 2 });
  await cache.get(5);
  assert.equal(db.reads, 2);
  // Another process reset the store and seeded other pets; this process learns it from the
  // next limiter reply.
  await db.inner.reset();
  await db.inner.seed([{ name: 'new1', categoryId: 2 }, { name: 'new2', categoryId: 2 }, { name: 'new3', categoryId: 2 }]);
  gen.observe('e:7');
  assert.deepEqual((await cache.list({ limit: 2 })).map((s) => s.pet.name), ['new1', 'new2']);
  assert.equal(await cache.get(5), undefined);
  assert.equal(db.reads, 4);
});

test('while the generation is unknown nothing is served from memory or kept', async () => {
  const { db, gen, cache } = setup();
  await seedPets(db, 5);
  await cache.list({ limit: 2 });
  gen.lost();
  await cache.list({ limit: 2 });
  await cache.get(1);
  await cache.get(1);
  assert.equal(db.reads, 4);
  assert.deepEqual(cache.size, { pets: 0, pages: 0, pagePets: 0 });
  gen.observe('e:0');
  await cache.get(1);
  await cache.get(1);
  assert.equal(db.reads, 5);
});

test('a read under way when the generation changes is answered but never kept', async () => {
  const { db, gen, cache } = setup();
  await seedPets(db, 5);
  let release = (): void => undefined;
  db.hold = new Promise((resolve) => { release = resolve; });
  const page = cache.list({ limit: 2 });
  const pet = cache.get(3);
  gen.observe('e:8');
  db.hold = undefined;
  release();
  assert.deepEqual(ids(await page), [1, 2]);
  assert.equal((await pet)?.pet.id, 3);
  assert.deepEqual(cache.size, { pets: 0, pages: 0, pagePets: 0 });
  // Even when the same token comes back after a loss, the old read stays out.
  db.hold = new Promise((resolve) => { release = resolve; });
  const again = cache.get(4);
  gen.lost();
  gen.observe('e:8');
  db.hold = undefined;
  release();
  await again;
  assert.deepEqual(cache.size, { pets: 0, pages: 0, pagePets: 0 });
});

test('reset and seed advance the generation after they commit; a failed advance fails them', async () => {
  const { db, gen, cache, advances } = setup();
  await seedPets(db, 5);
  await cache.list({ limit: 2 });
  await cache.reset();
  assert.deepEqual(advances, ['e:1']);
  assert.equal(gen.token, 'e:1');
  assert.deepEqual(cache.size, { pets: 0, pages: 0, pagePets: 0 });
  await cache.seed([{ name: 'a', categoryId: 1 }, { name: 'b', categoryId: 1 }, { name: 'c', categoryId: 1 }]);
  assert.deepEqual(advances, ['e:1', 'e:2']);
  assert.deepEqual((await cache.list({ limit: 2 })).map((s) => s.pet.name), ['a', 'b']);

  const broken = new StoreGeneration(() => Promise.reject(new Error('Redis away')));
  broken.observe('x:0');
  const other = new ReadCachedStore(db, broken);
  await assert.rejects(other.reset(), (err: Error) => err.name === 'StoreUnreachableError' && /Redis away/.test(err.message));
  assert.equal(broken.token, undefined, 'unknown until a limiter reply says it again');
  assert.deepEqual(ids(await db.inner.list({ limit: 10 })), [], 'the reset itself was done');
  // A refused seed wrote nothing and does not need Redis: its own error comes back.
  await assert.rejects(other.seed([{ name: 'x', categoryId: 1, id: 0 }]), (err: Error) => err.name === 'StoreInputError');
});

test('memory is bounded in bytes: oldest pets and pages go first', async () => {
  const one = petBytes({ pet: { id: 10, name: 'p10', categoryId: 1, status: 'sold' }, json: '{"id":10,"name":"p10","categoryId":1,"status":"sold"}' });
  // Room for about ten pets.
  const { db, cache } = setup({ maxBytes: 10 * one + 200 });
  await seedPets(db, 40);
  for (let id = 11; id <= 30; id++) await cache.get(id);
  assert.equal(cache.size.pets, 10);
  assert.ok(cache.bytes <= 10 * one + 200);
  assert.equal((await cache.get(30))?.pet.id, 30, 'the newest are kept');
  const before = db.reads;
  await cache.get(11);
  assert.equal(db.reads, before + 1, 'the oldest were dropped');
});

test('a pet is held once: a page keeps the objects held by id, and a pet on a page answers get()', async () => {
  const { db, cache } = setup();
  await seedPets(db, 10);
  const two = await cache.get(2);
  const page = await cache.list({ limit: 3 });
  const again = await cache.list({ limit: 3 });
  assert.equal(again[1], two, 'the page shares the pet read by id');
  assert.notEqual(again, page, 'a copy of the page is handed out');
  const shared = await cache.list({ limit: 3, afterId: 1 });
  const kept = await cache.list({ limit: 3, afterId: 1 });
  assert.equal(kept[1], again[2], 'overlapping pages share their pets');
  assert.deepEqual(ids(shared), [2, 3, 4]);
  const reads = db.reads;
  assert.equal((await cache.get(4))?.pet.id, 4);
  assert.equal(db.reads, reads, 'a pet held by a page answers get()');
  assert.deepEqual(cache.size, { pets: 4, pages: 2, pagePets: 6 });
});

test('a page is dropped with its pets unless something else holds them; a page too big for the bound is not kept', async () => {
  const { db, cache } = setup({ maxBytes: 40_000 });
  await seedPets(db, 200);
  await cache.get(1);
  for (let after = 0; after < 100; after += 5) await cache.list({ limit: 5, afterId: after });
  assert.ok(cache.bytes <= 40_000);
  const { pets, pagePets } = cache.size;
  assert.ok(pets <= pagePets + 1, `every pet held has a holder: ${JSON.stringify(cache.size)}`);
  const reads = db.reads;
  await cache.list({ limit: 5, afterId: 0 });
  assert.equal(db.reads, reads + 1, 'the oldest page was dropped');
  await cache.list({ limit: 150 });
  await cache.list({ limit: 150 });
  assert.equal(db.reads, reads + 3, 'a page bigger than the whole bound is never kept');
  await cache.reset();
  assert.deepEqual(cache.size, { pets: 0, pages: 0, pagePets: 0 });
  assert.equal(cache.bytes, 0);
});

test('a page version for the HTTP byte caches: stable within one store generation, never repeated across a change, never matched while unknown; count never repeats', async () => {
  const { gen, cache } = setup();
  assert.ok(hasPageVersion(cache), 'the read cache offers a page version');
  const first = cache.generation;
  assert.equal(cache.generation, first, 'stable while the generation holds');
  // A last page is valid only while count holds: another process may add pets at any time.
  assert.notEqual(cache.count, cache.count);
  gen.observe('e:7');
  const second = cache.generation;
  assert.notEqual(second, first, 'a new store generation moves the version on');
  gen.lost();
  const unknown = cache.generation;
  assert.notEqual(cache.generation, unknown, 'while unknown, no value is given twice');
  assert.ok(![first, second].includes(unknown));
  gen.observe('e:7');
  assert.ok(![first, second, unknown].includes(cache.generation), 'the same token again after an unknown spell is a new version');
  await cache.reset();
  const afterReset = cache.generation;
  assert.ok(![first, second].includes(afterReset), 'a reset moves it on');
});
