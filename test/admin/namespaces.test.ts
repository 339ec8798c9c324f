// The namespace registry: worlds made on first use from the factories it is given, bounded,
// named as the contract says, each with a clock of its own over the root's real time, and
// dropped with their state.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Namespaces, NoNamespaces, namespaceNameError, type WorldState } from '../../src/admin/index.js';
import { ApiError, ManualClock, type ServiceClock } from '../../src/core/index.js';
import { MemoryLimiter } from '../../src/limits/index.js';
import { openMemoryStore } from '../../src/store/index.js';

const BAN = { after: 3, seconds: 60 };

function registry(bound: number, rootClock: ServiceClock = new ManualClock()): { namespaces: Namespaces; opened: ServiceClock[] } {
  const opened: ServiceClock[] = [];
  const open = (clock: ServiceClock): WorldState => {
    opened.push(clock);
    return { store: openMemoryStore({ clock }), keyLimiter: new MemoryLimiter({ clock, ban: BAN }), addressLimiter: new MemoryLimiter({ clock, ban: BAN, maxEntries: 100 }) };
  };
  return { namespaces: new Namespaces({ bound, journalSize: 10, rootClock, open }), opened };
}

test('a world is made by its first use, once; the same name gives the same world', () => {
  const { namespaces, opened } = registry(2);
  const a = namespaces.select('a');
  assert.ok(!(a instanceof ApiError));
  assert.equal(a.prefix, '/ns/a');
  assert.equal(namespaces.select('a'), a);
  assert.equal(opened.length, 1);
  assert.deepEqual(namespaces.list(), [{ name: 'a', pets: 0, requests: 0 }]);
});

test('the N+1th name is a 409 naming the bound, and nothing is made', () => {
  const { namespaces, opened } = registry(2);
  namespaces.select('a');
  namespaces.select('b');
  const third = namespaces.select('c');
  assert.ok(third instanceof ApiError);
  assert.equal(third.status, 409);
  assert.equal(third.code, 'conflict');
  assert.match(third.message, /admin\.namespaces allows \(2\)/);
  assert.equal(opened.length, 2);
  assert.deepEqual(namespaces.list().map((n) => n.name), ['a', 'b']);
});

test('names: 1 to 64 of A-Z a-z 0-9 . _ -; anything else a 400 naming it', () => {
  for (const good of ['a', 'A.b_c-9', 'x'.repeat(64)]) assert.equal(namespaceNameError(good), undefined, good);
  for (const bad of ['', 'x'.repeat(65), 'a b', 'a/b', 'a%20', 'é', 'a?']) {
    const err = namespaceNameError(bad);
    assert.ok(err instanceof ApiError, bad);
    assert.equal(err.status, 400);
    assert.ok(err.message.includes(JSON.stringify(bad.slice(0, 80))), err.message);
  }
  const { namespaces, opened } = registry(5);
  assert.ok(namespaces.select('a b') instanceof ApiError);
  assert.equal(opened.length, 0);
});

test('each world keeps its own pets and ids; a drop lets its state go and frees its slot', async () => {
  const { namespaces } = registry(1);
  const a = namespaces.select('a');
  assert.ok(!(a instanceof ApiError));
  await a.store.create({ name: 'Rex', categoryId: 1 });
  await a.store.create({ name: 'Tom', categoryId: 1 });
  a.requests += 2;
  assert.deepEqual(namespaces.list(), [{ name: 'a', pets: 2, requests: 2 }]);
  assert.ok(namespaces.select('b') instanceof ApiError, 'bound of 1');
  assert.equal(await namespaces.drop('a'), true);
  assert.equal(await namespaces.drop('a'), false);
  const again = namespaces.select('a');
  assert.ok(!(again instanceof ApiError));
  assert.notEqual(again, a);
  assert.equal(again.store.count, 0, 'made anew, empty');
  const stored = await again.store.create({ name: 'Rex', categoryId: 1 });
  assert.equal(stored.pet.id, 1, 'ids from 1');
});

test("a world's clock is the root's real time plus its own offset: the root's advance does not move it, and its own does not move the root", () => {
  const root = new ManualClock(Date.UTC(2026, 0, 1));
  const { namespaces } = registry(2, root);
  const a = namespaces.select('a');
  const b = namespaces.select('b');
  assert.ok(!(a instanceof ApiError) && !(b instanceof ApiError));
  root.advance(60_000);
  assert.equal(a.clock.now(), Date.UTC(2026, 0, 1), 'the root offset is the root\'s');
  a.clock.advance(3_600_000);
  assert.equal(a.clock.now(), Date.UTC(2026, 0, 1) + 3_600_000);
  assert.equal(b.clock.now(), Date.UTC(2026, 0, 1));
  assert.equal(root.now(), Date.UTC(2026, 0, 1) + 60_000);
  root.jumpWall(1_000);
  assert.equal(b.clock.now(), Date.UTC(2026, 0, 1) + 1_000, 'real time moves every world');
});

test("a world's reset is its own: pets, limits, faults, journal and clock; the others keep theirs", async () => {
  const { namespaces } = registry(2);
  const a = namespaces.select('a');
  const b = namespaces.select('b');
  assert.ok(!(a instanceof ApiError) && !(b instanceof ApiError));
  for (const w of [a, b]) {
    await w.store.create({ name: 'Rex', categoryId: 1 });
    w.harness.faults.set({ operation: '*', status: 503, kind: undefined, delay: undefined, retryAfter: 1, count: 1, probability: undefined, seed: undefined });
    w.clock.advance(5_000);
  }
  await a.harness.reset();
  assert.equal(a.store.count, 0);
  assert.equal(a.harness.faults.armed, 0);
  assert.equal(a.clock.offsetMs, 0);
  assert.equal(b.store.count, 1);
  assert.equal(b.harness.faults.armed, 1);
  assert.equal(b.clock.offsetMs, 5_000);
  assert.equal(typeof a.harness.control.snapshots, 'object', 'a world takes snapshots');
  assert.equal(a.harness.control.namespaces, undefined, 'a world lists no namespaces');
});

test('with --workers every use is a 501 that says why', async () => {
  const none = new NoNamespaces('the service runs with --workers');
  for (const err of [none.select(), none.list(), await none.drop()]) {
    assert.ok(err instanceof ApiError);
    assert.equal(err.status, 501);
    assert.match(err.message, /--workers/);
  }
});
