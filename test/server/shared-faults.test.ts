// Faults shared by the workers of `--workers N`, over a stand-in for the primary: what every
// worker lists of a count fault once requests were caught by several of them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SharedFaults } from '../../src/server/shared-faults.js';
import type { Peers } from '../../src/server/peers.js';
import { parseFault } from '../../src/api/index.js';
import { ApiError } from '../../src/core/index.js';

/** Workers joined as the primary joins them: asks and tells reach the others, claims one counter. */
function workers(n: number): SharedFaults[] {
  const claims = new Map<string, number>();
  const all: Array<{ answers: Map<string, (p: unknown) => unknown>; told: Map<string, (p: unknown) => void> }> = [];
  const out: SharedFaults[] = [];
  for (let i = 0; i < n; i++) {
    const me = { answers: new Map<string, (p: unknown) => unknown>(), told: new Map<string, (p: unknown) => void>() };
    all.push(me);
    const others = (): typeof all => all.filter((w) => w !== me);
    const peers: Peers = {
      ask: (what, payload) => Promise.resolve(others().map((w) => w.answers.get(what)?.(payload))),
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
    };
    out.push(new SharedFaults(peers));
  }
  return out;
}

test('every worker lists a count fault with the catches of all: fired and remaining add up to count', async () => {
  const [a, b, c] = workers(3) as [SharedFaults, SharedFaults, SharedFaults];
  const spec = parseFault({ operation: 'listPets', status: 503, count: 20 }, ['listPets']);
  assert.ok(!(spec instanceof ApiError));
  a.set(spec);
  await a.shared();
  for (let i = 0; i < 10; i++) await [a, b, c][i % 3]?.take('listPets');
  for (const w of [a, b, c]) {
    assert.deepEqual(w.list().map((f) => ({ fired: f.fired, remaining: f.remaining })), [{ fired: 10, remaining: 10 }]);
  }
});
