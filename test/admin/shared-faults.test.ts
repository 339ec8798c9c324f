// Faults shared by the workers of `--workers N`, over a stand-in for the primary: what every
// worker lists of a count fault once requests were caught by several of them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SharedFaults, parseFault, type FaultSpec, type Peers } from '../../src/admin/index.js';
import { ApiError } from '../../src/core/index.js';

/** Workers joined as the primary joins them: asks and tells reach the others, claims one counter. */
function workers(n: number): { all: SharedFaults[]; start(): SharedFaults } {
  const claims = new Map<string, number>();
  const all: Array<{ answers: Map<string, (p: unknown) => unknown>; told: Map<string, (p: unknown) => void> }> = [];
  const out: SharedFaults[] = [];
  const start = (): SharedFaults => {
    const me = { answers: new Map<string, (p: unknown) => unknown>(), told: new Map<string, (p: unknown) => void>() };
    all.push(me);
    const others = (): typeof all => all.filter((w) => w !== me);
    const peers: Peers = {
      // Delivered a turn later, as over IPC: asks sent at the same moment cross.
      ask: (what, payload) => new Promise((resolve) => setImmediate(() => resolve(others().map((w) => w.answers.get(what)?.(payload))))),
      askEvery: (what, payload) => new Promise((resolve) => setImmediate(() => resolve({ answers: others().map((w) => w.answers.get(what)?.(payload)), missing: 0 }))),
      gather: () => Promise.resolve([]),
      tell: (what, payload) => { for (const w of others()) w.told.get(what)?.(payload); },
      claim: (name, max) => new Promise((resolve) => setImmediate(() => {
        const granted = claims.get(name) ?? 0;
        if (granted >= max) return resolve(false);
        claims.set(name, granted + 1);
        resolve(true);
      })),
      answer: (what, fn) => { me.answers.set(what, fn); },
      onTold: (what, fn) => { me.told.set(what, fn); },
      close: () => undefined,
    };
    const faults = new SharedFaults(peers);
    out.push(faults);
    return faults;
  };
  for (let i = 0; i < n; i++) start();
  return { all: out, start };
}

test('every worker lists a count fault with the catches of all: fired and remaining add up to count', async () => {
  const [a, b, c] = workers(3).all as [SharedFaults, SharedFaults, SharedFaults];
  const spec = parseFault({ operation: 'listPets', status: 503, count: 20 }, ['listPets']);
  assert.ok(!(spec instanceof ApiError));
  a.set(spec);
  await a.shared();
  for (let i = 0; i < 10; i++) await [a, b, c][i % 3]?.take('listPets');
  for (const w of [a, b, c]) {
    assert.deepEqual(w.list().map((f) => ({ fired: f.fired, remaining: f.remaining })), [{ fired: 10, remaining: 10 }]);
  }
});

// Before, a worker the primary restarted after a crash started with no faults: it caught none
// of the requests it got and listed none, while the others still had theirs.
test('a worker that starts takes over the faults the others armed, the same armings: one count for all', async () => {
  const service = workers(2);
  const [a, b] = service.all as [SharedFaults, SharedFaults];
  const count = parseFault({ operation: 'listPets', status: 503, count: 6 }, ['listPets']);
  const any = parseFault({ operation: '*', status: 429, probability: 1, seed: 3 }, ['listPets']);
  assert.ok(!(count instanceof ApiError) && !(any instanceof ApiError));
  a.set(count);
  a.set(any);
  await a.shared();
  for (let i = 0; i < 4; i++) assert.equal((await [a, b][i % 2]?.take('listPets'))?.status, 503);
  const c = service.start();
  await c.shared();
  assert.deepEqual(c.list(), a.list(), 'the listing of a worker started now');
  // Six in all, over the three workers: then the "*" fault.
  const hits = await Promise.all([c, c, c, a, b].map((w) => w.take('listPets')));
  assert.deepEqual(hits.map((h) => h?.status).sort(), [429, 429, 429, 503, 503]);
  for (const w of [a, b, c]) assert.deepEqual(w.list().map((f) => f.operation), ['*']);
});

// Before, sets crossing on their way (two sets of one operation through two workers at the same
// moment) left each worker with the other's fault: the listings differed, and a count of 5
// caught 10 (seen black-box with four sets through two workers: 10 of 60 caught).
test('sets and clears crossing between workers leave every worker with the same faults', async () => {
  const ops = ['listPets', 'getPet'];
  const spec = (body: Record<string, unknown>): FaultSpec => {
    const parsed = parseFault(body, ops);
    assert.ok(!(parsed instanceof ApiError));
    return parsed;
  };
  const [a, b, c] = workers(3).all as [SharedFaults, SharedFaults, SharedFaults];
  const same = (): void => {
    // (Sets that crossed may be listed in another order: the order each worker got them.)
    const listings = [a, b, c].map((w) => JSON.stringify(w.list().sort((x, y) => x.operation.localeCompare(y.operation))));
    assert.equal(new Set(listings).size, 1, listings.join('\n'));
  };
  for (let k = 0; k < 4; k++) [a, b, c][k % 3]?.set(spec({ operation: 'listPets', status: 503, count: 5, retryAfter: k + 1 }));
  await Promise.all([a, b, c].map((w) => w.shared()));
  same();
  const hits = await Promise.all(Array.from({ length: 30 }, (_, i) => [a, b, c][i % 3]?.take('listPets')));
  assert.equal(hits.filter((h) => h !== undefined).length, 5, 'one count for all');
  // A clear crossing a set: the set made after the clear was seen stays; one made before goes.
  b.set(spec({ operation: 'getPet', status: 429, count: 3 }));
  a.clear();
  c.set(spec({ operation: 'listPets', status: 503, count: 2 }));
  await Promise.all([a, b, c].map((w) => w.shared()));
  same();
  a.set(spec({ operation: 'getPet', status: 503, count: 1 }));
  b.clear();
  await Promise.all([a, b, c].map((w) => w.shared()));
  same();
});
