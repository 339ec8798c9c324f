// The index's lists in segments (src/store/pet-index.ts): reads, snapshots and restores at
// and across segment edges, where a wrong shift, mask or shared segment would show.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Pet, PetStatus } from '../../src/core/types.js';
import { ManualClock } from '../../src/core/clock.js';
import { PetIndex, SEGMENT_SIZE, itemAt, ownedLists } from '../../src/store/pet-index.js';
import { canSnapshot, openMemoryStore } from '../../src/store/index.js';

const EDGE = SEGMENT_SIZE;
const STATUSES: ReadonlyArray<PetStatus | undefined> = ['available', 'pending', 'sold', undefined];

function pet(id: number): Pet {
  const status = STATUSES[id % 4];
  return status === undefined ? { id, name: `pet ${id}`, categoryId: id } : { id, name: `pet ${id}`, categoryId: id, status };
}

function filled(n: number, first = 1, step = 1): PetIndex {
  const index = new PetIndex();
  for (let i = 0; i < n; i++) index.add(pet(first + i * step));
  return index;
}

/** Every pet of `index` (by listing) and, per status, its ids: the whole content. */
function content(index: PetIndex): { all: number[]; byStatus: Record<PetStatus, number[]> } {
  const ids = (status?: PetStatus) => index.list(status, undefined, Number.MAX_SAFE_INTEGER).map((p) => p.id);
  return { all: ids(), byStatus: { available: ids('available'), pending: ids('pending'), sold: ids('sold') } };
}

function expected(ids: number[]): { all: number[]; byStatus: Record<PetStatus, number[]> } {
  const of = (s: PetStatus) => ids.filter((id) => STATUSES[id % 4] === s);
  return { all: ids, byStatus: { available: of('available'), pending: of('pending'), sold: of('sold') } };
}

const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, i) => from + i);

test('get finds the pets on both sides of a segment edge, dense ids or not', () => {
  const dense = filled(2 * EDGE + 3);
  for (const id of [1, EDGE - 1, EDGE, EDGE + 1, EDGE + 2, 2 * EDGE, 2 * EDGE + 1, 2 * EDGE + 3]) {
    assert.equal(dense.get(id)?.id, id, `id ${id}`);
  }
  assert.equal(dense.get(2 * EDGE + 4), undefined);
  assert.equal(dense.get(0), undefined);
  assert.equal(dense.get(2 ** 32 + 1), undefined, 'past 2^32 the slot shift wraps: the id check catches it');
  // Odd ids only: the direct slot misses, the search crosses segments.
  const sparse = filled(EDGE + 5, 1, 2);
  for (const k of [0, EDGE - 2, EDGE - 1, EDGE, EDGE + 1, EDGE + 4]) {
    const id = 1 + 2 * k;
    assert.equal(sparse.get(id)?.id, id, `id ${id}`);
    assert.equal(sparse.get(id + 1), undefined, `id ${id + 1}`);
  }
});

test('a list with a cursor crosses segment edges, with and without a status', () => {
  const index = filled(2 * EDGE + 10);
  assert.deepEqual(index.list(undefined, EDGE - 2, 5).map((p) => p.id), range(EDGE - 1, EDGE + 3));
  assert.deepEqual(index.list(undefined, 2 * EDGE - 1, 3).map((p) => p.id), range(2 * EDGE, 2 * EDGE + 2));
  assert.deepEqual(index.list(undefined, 2 * EDGE + 9, 5).map((p) => p.id), [2 * EDGE + 10]);
  // The status lists hold a quarter of the pets each: their own edges fall elsewhere.
  for (const status of ['available', 'pending', 'sold'] as const) {
    const all = index.list(status, undefined, 10 * EDGE).map((p) => p.id);
    assert.deepEqual(all, range(1, 2 * EDGE + 10).filter((id) => STATUSES[id % 4] === status));
    assert.ok(all.length > EDGE / 2);
    for (const k of [EDGE - 2, EDGE - 1, EDGE]) {
      if (k >= all.length) continue;
      const after = all[k - 1] as number;
      assert.deepEqual(index.list(status, after, 3).map((p) => p.id), all.slice(k, k + 3), `${status} after ${after}`);
    }
  }
  // More than a segment of one status: its list has an edge of its own.
  const sold = new PetIndex();
  for (let id = 1; id <= EDGE + 4; id++) sold.add({ id, name: 'x', categoryId: 1, status: 'sold' });
  assert.deepEqual(sold.list('sold', EDGE - 1, 3).map((p) => p.id), [EDGE, EDGE + 1, EDGE + 2]);
  assert.deepEqual(sold.list('pending', undefined, 3), []);
});

test('a snapshot taken mid-segment keeps its pets while the live index grows past the edge', () => {
  const index = filled(EDGE - 3);
  const s = index.state();
  for (let id = EDGE - 2; id <= EDGE + 5; id++) index.add(pet(id));
  assert.equal(s.count, EDGE - 3);
  assert.equal(itemAt(s.pets, s.count - 1).id, EDGE - 3);
  // Restored, it is exactly the pets then, and appends go on from there.
  const restored = new PetIndex();
  restored.restore(ownedLists(s), s.nextId);
  assert.deepEqual(content(restored), expected(range(1, EDGE - 3)));
  for (let id = 1000 * EDGE; id < 1000 * EDGE + 8; id++) restored.add(pet(id));
  assert.deepEqual(content(restored), expected([...range(1, EDGE - 3), ...range(1000 * EDGE, 1000 * EDGE + 7)]));
  // The live index and the snapshot are untouched by the restored index's appends.
  assert.deepEqual(content(index), expected(range(1, EDGE + 5)));
  assert.equal(itemAt(s.pets, EDGE - 4).id, EDGE - 3);
  assert.equal(index.get(EDGE - 2)?.id, EDGE - 2);
});

test('two restores of one snapshot append across the edge, each on its own', () => {
  const live = filled(EDGE - 2);
  const s = live.state();
  const a = new PetIndex();
  const b = new PetIndex();
  a.restore(ownedLists(s), s.nextId);
  b.restore(ownedLists(s), s.nextId);
  for (let i = 0; i < 5; i++) {
    a.add(pet(EDGE + 100 + i));
    b.add(pet(EDGE + 200 + i));
    live.add(pet(EDGE - 1 + i));
  }
  assert.deepEqual(content(a), expected([...range(1, EDGE - 2), ...range(EDGE + 100, EDGE + 104)]));
  assert.deepEqual(content(b), expected([...range(1, EDGE - 2), ...range(EDGE + 200, EDGE + 204)]));
  assert.deepEqual(content(live), expected(range(1, EDGE + 3)));
  assert.equal(a.get(EDGE + 100)?.id, EDGE + 100);
  assert.equal(a.get(EDGE + 200), undefined);
});

test('a snapshot at an exact segment edge shares every segment, and appends start a new one', () => {
  const live = filled(2 * EDGE);
  const s = live.state();
  const lists = ownedLists(s);
  assert.equal(lists.pets.length, 2);
  assert.ok(lists.pets[1] === s.pets[1], 'full segments are shared, not copied');
  const restored = new PetIndex();
  restored.restore(lists, s.nextId);
  restored.add(pet(3 * EDGE));
  live.add(pet(2 * EDGE + 1));
  assert.equal(restored.get(3 * EDGE)?.id, 3 * EDGE);
  assert.equal(restored.get(2 * EDGE + 1), undefined);
  assert.equal(live.get(2 * EDGE + 1)?.id, 2 * EDGE + 1);
  assert.deepEqual(restored.list(undefined, 2 * EDGE - 1, 5).map((p) => p.id), [2 * EDGE, 3 * EDGE]);
});

test('load splits pets into segments with the same content', () => {
  const pets = range(1, 2 * EDGE + 7).map(pet);
  const index = new PetIndex();
  index.load(pets, 2 * EDGE + 8);
  assert.deepEqual(content(index), expected(range(1, 2 * EDGE + 7)));
  index.add(pet(2 * EDGE + 8));
  assert.equal(index.get(2 * EDGE + 8)?.id, 2 * EDGE + 8);
  assert.equal(index.count, 2 * EDGE + 8);
});

test('memory store: a snapshot mid-segment, creates past the edge, a restore, creates again', async () => {
  const store = openMemoryStore({ clock: new ManualClock(Date.UTC(2026, 0, 1)) });
  assert.ok(canSnapshot(store));
  await store.seed(range(1, EDGE - 2).map((id) => ({ name: `pet ${id}`, categoryId: id, status: STATUSES[id % 4] })).map((p) => (p.status === undefined ? { name: p.name, categoryId: p.categoryId } : p)) as never);
  const snap = await store.captureSnapshot();
  for (let i = 0; i < 6; i++) await store.create({ name: 'later', categoryId: 1, status: 'sold' });
  assert.equal(store.count, EDGE + 4);
  await store.restoreSnapshot(snap);
  assert.equal(store.count, EDGE - 2);
  for (let i = 0; i < 6; i++) await store.create({ name: 'again', categoryId: 2, status: 'sold' });
  const page = store.list({ status: 'sold', afterId: EDGE - 10, limit: 20 }).map((s) => [s.pet.id, s.pet.name]);
  const soldBefore = range(EDGE - 9, EDGE - 2).filter((id) => STATUSES[id % 4] === 'sold').map((id) => [id, `pet ${id}`]);
  assert.deepEqual(page, [...soldBefore, ...range(EDGE - 1, EDGE + 4).map((id) => [id, 'again'])]);
  // The snapshot still restores to what it held.
  await store.restoreSnapshot(snap);
  assert.equal(store.count, EDGE - 2);
  assert.equal(store.get(EDGE - 1), undefined);
  await store.close();
});
