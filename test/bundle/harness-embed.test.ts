// The embedding handle has every admin feature, as an embedder imports the built bundle:
// faults (arm, list, clear), the journal (query, count, wait, clear), snapshots (save,
// restore, list, delete); a feature the config has off throws AdminOffError instead of
// answering nothing.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { pathToFileURL } from 'node:url';
import { BUNDLE, KEYS, call, post, testConfig } from '../support/bundle.js';

interface Handle {
  url: string;
  close(): Promise<void>;
  journal: ((f?: object) => Promise<{ requests: Array<{ operation: string | null; status: number; headers: Record<string, string> }>; dropped: number }>) & {
    query(f?: object): Promise<{ requests: unknown[]; dropped: number }>;
    count(f?: object): Promise<number>;
    wait(f: object): Promise<{ count: number; met: boolean; waitedMs: number }>;
    clear(): Promise<void>;
  };
  faults: { arm(f: object): Promise<Array<Record<string, unknown>>>; list(): Array<Record<string, unknown>>; clear(): Promise<void> };
  snapshots: { save(n: string): Promise<{ name: string; pets: number }>; restore(n: string): Promise<void>; list(): Array<{ name: string }>; delete(n: string): void };
}
interface PetstoreModule {
  startPetstore(o: Record<string, unknown>): Promise<Handle & { namespace(name: string): Handle & { name: string; clock: { advance(ms: number): void; offsetMs: number } } }>;
  AdminOffError: new (...args: never[]) => Error;
}

const ADMIN_KEY = 'admin-key-for-embedding-0123';
const keys = testConfig().keys;

describe('the handle has every admin feature', () => {
  test('faults, journal query/count/wait/clear, snapshots save/list/restore/delete', async () => {
    const { startPetstore } = (await import(pathToFileURL(BUNDLE).href)) as PetstoreModule;
    const store = await startPetstore({ port: 0, config: { keys, admin: { key: ADMIN_KEY } } });
    try {
      const armed = await store.faults.arm({ operation: 'createPet', status: 503, count: 1 });
      assert.deepEqual(armed.map((f) => [f.operation, f.status, f.remaining]), [['createPet', 503, 1]]);
      assert.equal(store.faults.list().length, 1);
      await assert.rejects(store.faults.arm({ operation: 'createPet', status: 700 }), (err: Error) => err instanceof RangeError && /status must be an integer from 400 to 599/.test(err.message));
      assert.equal((await post(`${store.url}/pets`, KEYS.pro, { name: 'Rex', categoryId: 1 })).status, 503);
      assert.equal((await post(`${store.url}/pets`, KEYS.pro, { name: 'Rex', categoryId: 1 })).status, 201);
      await store.faults.arm({ operation: 'listPets', status: 500, count: 9 });
      await store.faults.clear();
      assert.deepEqual(store.faults.list(), []);

      assert.equal(await store.journal.count({ operation: 'createPet' }), 2);
      assert.equal(await store.journal.count({ operation: 'createPet', status: 201 }), 1);
      const page = await store.journal({ operation: 'createPet' });
      assert.deepEqual(page.requests.map((e) => e.status), [503, 201], 'callable as before');
      assert.equal(page.requests[0]?.headers.authorization, 'Bearer pro-test');
      const waiting = store.journal.wait({ operation: 'getPet', atLeast: 1, timeoutMs: 30_000 });
      await call(`${store.url}/pets/1`, { key: KEYS.pro });
      assert.deepEqual({ ...(await waiting), waitedMs: 0 }, { count: 1, met: true, waitedMs: 0 });
      await assert.rejects(store.journal.count({ header: 'no-colon' }), RangeError);
      await store.journal.clear();
      assert.equal(await store.journal.count(), 0);

      assert.deepEqual(await store.snapshots.save('one'), { name: 'one', pets: 1 });
      assert.deepEqual(store.snapshots.list().map((s) => s.name), ['one']);
      await post(`${store.url}/pets`, KEYS.pro, { name: 'Tom', categoryId: 1 });
      await store.snapshots.restore('one');
      store.snapshots.delete('one');
      assert.deepEqual(store.snapshots.list(), []);
      assert.throws(() => store.snapshots.delete('one'), /one/);
    } finally {
      await store.close();
    }
  });

  test('a feature that is off throws AdminOffError, never an empty answer', async () => {
    const { startPetstore } = (await import(pathToFileURL(BUNDLE).href)) as PetstoreModule;
    const store = await startPetstore({ port: 0, config: { keys } });
    try {
      // A real 429 happened; a journal that is off must not say "nothing was sent".
      await call(`${store.url}/pets`, { key: KEYS.pro });
      for (const call of [() => store.journal(), () => store.journal.count(), () => store.journal.wait({ atLeast: 1 }), () => store.journal.clear(), () => store.faults.arm({ operation: 'listPets', status: 503 })]) {
        await assert.rejects(call(), (err: Error) => err.name === 'AdminOffError' && /"admin"/.test(err.message));
      }
      assert.throws(() => store.faults.list(), (err: Error) => err.name === 'AdminOffError');
    } finally {
      await store.close();
    }
    const quiet = await startPetstore({ port: 0, config: { keys, admin: { key: ADMIN_KEY, journal: 0 } } });
    try {
      await assert.rejects(quiet.journal.count(), (err: Error) => err.name === 'AdminOffError' && /"journal": 0/.test(err.message));
    } finally {
      await quiet.close();
    }
  });
});

test('handle.namespace(name): a handle of one namespace, with every admin feature; off, it says so', async () => {
  const { startPetstore, AdminOffError } = (await import(pathToFileURL(BUNDLE).href)) as PetstoreModule;
  const store = await startPetstore({ port: 0, config: { keys, admin: { key: ADMIN_KEY, namespaces: 2 } } });
  try {
    const a = store.namespace('test-a');
    assert.match(a.url, /\/ns\/test-a\/v1$/);
    assert.equal((await post(`${a.url}/pets`, KEYS.pro, { name: 'Rex', categoryId: 1 })).status, 201);
    assert.equal(await a.journal.count({ operation: 'createPet' }), 1);
    assert.equal(await store.journal.count(), 0, 'the root saw nothing');
    await a.faults.arm({ operation: 'listPets', status: 500 });
    assert.equal((await call(`${store.url}/pets`, { key: KEYS.pro })).status, 200, 'a fault of the namespace is not the root\'s');
    assert.equal((await call(`${a.url}/pets`, { key: KEYS.pro })).status, 500);
    a.clock.advance(60_000);
    assert.equal(a.clock.offsetMs, 60_000);
    assert.equal(store.namespace('test-a').url, a.url, 'the same namespace again');
    store.namespace('test-b');
    assert.throws(() => store.namespace('test-c'), /2/, 'past the bound');
    assert.throws(() => store.namespace('bad name'), RangeError);
  } finally {
    await store.close();
  }
  const off = await startPetstore({ port: 0, config: { keys, admin: { key: ADMIN_KEY } } });
  try {
    assert.throws(() => off.namespace('x'), (err: Error) => err instanceof AdminOffError && /namespaces/.test(err.message));
  } finally {
    await off.close();
  }
});
