// One table of cases, run against every PetStore: memory, file and PostgreSQL. Each case says
// what the PetStore interface promises (contract.ts); a backend passes only by answering exactly what
// the others answer: the same pets, ids, JSON text (key order included), pages and refusals.
// PostgreSQL runs against a real server (test/support/postgres.ts), skipped with one line
// when it is not installed.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import {
  hasPageVersion, openFileStore, openMemoryStore, openPostgresStore, StoreInputError, StoreUnavailableError,
} from '../../src/store/index.js';
import type { PetStore, StoredPet } from '../../src/store/index.js';
import { silentLogger } from '../../src/core/index.js';
import type { NewPet, PetStatus } from '../../src/core/types.js';
import { tempDir } from '../support/bundle.js';
import { skipUnless } from '../support/engines.js';
import { startPostgres, type PostgresServer } from '../support/postgres.js';

const STATUSES: Array<PetStatus | undefined> = ['available', 'pending', 'sold', undefined];

function newPet(i: number): NewPet {
  const status = STATUSES[i % STATUSES.length];
  return status === undefined ? { name: `pet ${i}`, categoryId: i % 7 } : { name: `pet ${i}`, categoryId: i % 7, status };
}

const ids = (pets: readonly StoredPet[]): number[] => pets.map((p) => p.pet.id);

/** Creates one after the other: ids follow the order of the calls. */
async function createInOrder(store: PetStore, n: number): Promise<StoredPet[]> {
  const out: StoredPet[] = [];
  for (let i = 0; i < n; i++) out.push(await store.create(newPet(i)));
  return out;
}

async function listAll(store: PetStore): Promise<StoredPet[]> {
  const out: StoredPet[] = [];
  for (;;) {
    const last = out.at(-1);
    const page = await store.list(last === undefined ? { limit: 100 } : { limit: 100, afterId: last.pet.id });
    if (page.length === 0) return out;
    out.push(...page);
  }
}

interface Case {
  readonly name: string;
  run(store: PetStore): Promise<void>;
}

const CASES: Case[] = [
  {
    name: 'an empty store lists nothing and finds nothing',
    async run(store) {
      assert.deepEqual(await store.list({ limit: 20 }), []);
      assert.equal(await store.get(1), undefined);
    },
  },
  {
    name: 'create: ids ascend from 1, the JSON text has the keys id, name, categoryId, status in order',
    async run(store) {
      const created = await createInOrder(store, 5);
      assert.deepEqual(ids(created), [1, 2, 3, 4, 5]);
      assert.deepEqual(created[1]?.pet, { id: 2, name: 'pet 1', categoryId: 1, status: 'pending' });
      assert.equal(created[1]?.json, '{"id":2,"name":"pet 1","categoryId":1,"status":"pending"}');
      assert.equal(created[3]?.json, '{"id":4,"name":"pet 3","categoryId":3}', 'no status: no key');
      assert.deepEqual(Object.keys(created[3]?.pet ?? {}), ['id', 'name', 'categoryId']);
      assert.equal((await store.get(2))?.json, created[1]?.json);
      assert.deepEqual((await store.get(4))?.pet, created[3]?.pet);
    },
  },
  {
    name: 'get: 0, negatives, fractions, unknown and unsafe ids are not found',
    async run(store) {
      await createInOrder(store, 3);
      for (const id of [0, -1, 2.5, 4, Number.MAX_SAFE_INTEGER, Number.POSITIVE_INFINITY]) assert.equal(await store.get(id), undefined, String(id));
    },
  },
  {
    name: 'list: filters, cursors and limits',
    async run(store) {
      await createInOrder(store, 20); // status cycles available, pending, sold, none
      const cases: Array<{ q: Parameters<PetStore['list']>[0]; want: number[] }> = [
        { q: { limit: 5 }, want: [1, 2, 3, 4, 5] },
        { q: { limit: 3, afterId: 17 }, want: [18, 19, 20] },
        { q: { limit: 100, afterId: 20 }, want: [] },
        { q: { limit: 2, afterId: 0 }, want: [1, 2] },
        { q: { limit: 2, afterId: -5 }, want: [1, 2] },
        { q: { limit: 101 }, want: Array.from({ length: 20 }, (_, i) => i + 1) },
        { q: { status: 'available', limit: 100 }, want: [1, 5, 9, 13, 17] },
        { q: { status: 'pending', limit: 2, afterId: 2 }, want: [6, 10] },
        { q: { status: 'sold', limit: 10, afterId: 15 }, want: [19] },
        { q: { status: 'sold', limit: 10, afterId: 19 }, want: [] },
        { q: { status: 'available', limit: 1, afterId: 4 }, want: [5] },
        { q: { limit: 5, afterId: Number.MAX_SAFE_INTEGER }, want: [] },
      ];
      for (const c of cases) assert.deepEqual(ids(await store.list(c.q)), c.want, JSON.stringify(c.q));
      for (const p of await store.list({ status: 'pending', limit: 100 })) assert.equal(p.pet.status, 'pending');
      const page = await store.list({ limit: 2, afterId: 3 });
      assert.deepEqual(page.map((p) => p.json), ['{"id":4,"name":"pet 3","categoryId":3}', '{"id":5,"name":"pet 4","categoryId":4,"status":"available"}']);
    },
  },
  {
    name: 'names and categories round-trip exactly',
    async run(store) {
      const pets: NewPet[] = [
        { name: 'Rex "the dog" \\ é 🐕 \u0085 \u2028', categoryId: Number.MAX_SAFE_INTEGER, status: 'sold' },
        { name: 'x'.repeat(256), categoryId: -Number.MAX_SAFE_INTEGER },
        { name: ' leading space', categoryId: 0, status: 'available' },
      ];
      const created: StoredPet[] = [];
      for (const p of pets) created.push(await store.create(p));
      for (const [i, p] of pets.entries()) {
        const found = await store.get(i + 1);
        assert.deepEqual(found?.pet, { id: i + 1, ...p });
        assert.equal(found?.json, created[i]?.json);
        assert.deepEqual(JSON.parse(found?.json ?? ''), { id: i + 1, ...p });
      }
    },
  },
  {
    name: 'concurrent creates get distinct ids, all listed in ascending order',
    async run(store) {
      const created = await Promise.all(Array.from({ length: 50 }, (_, i) => store.create(newPet(i))));
      assert.deepEqual(ids(created).sort((a, b) => a - b), Array.from({ length: 50 }, (_, i) => i + 1));
      assert.deepEqual(ids(await listAll(store)), Array.from({ length: 50 }, (_, i) => i + 1));
    },
  },
  {
    name: 'seed: explicit ids (ascending, above every existing one) and new ones; creates continue after them',
    async run(store) {
      await createInOrder(store, 2);
      const seeded = await store.seed([{ name: 'a', categoryId: 1 }, { id: 10, name: 'b', categoryId: 2, status: 'sold' }, { name: 'c', categoryId: 3 }, { id: 40, name: 'd', categoryId: 4 }]);
      assert.deepEqual(ids(seeded), [3, 10, 11, 40]);
      assert.equal(seeded[1]?.json, '{"id":10,"name":"b","categoryId":2,"status":"sold"}');
      assert.equal((await store.create(newPet(0))).pet.id, 41, 'the next id is past the seeded ones');
      assert.deepEqual(ids(await listAll(store)), [1, 2, 3, 10, 11, 40, 41]);
      assert.deepEqual(await store.seed([]), []);
      assert.equal((await store.create(newPet(1))).pet.id, 42);
    },
  },
  {
    name: 'seed: ids not above the existing ones, or not ascending, are refused and nothing is stored',
    async run(store) {
      await createInOrder(store, 3);
      await assert.rejects(store.seed([{ name: 'a', categoryId: 1 }, { id: 3, name: 'b', categoryId: 1 }]), (err: Error) => {
        assert.ok(err instanceof StoreInputError);
        assert.equal(err.message, 'seed pet #1 has id 3, which is not above every existing id (the next free id is 5)');
        return true;
      });
      await assert.rejects(store.seed([{ id: 9, name: 'a', categoryId: 1 }, { id: 8, name: 'b', categoryId: 1 }]), (err: Error) => {
        assert.ok(err instanceof StoreInputError);
        assert.equal(err.message, 'seed pet #1 has id 8, which is not above the id before it (9)');
        return true;
      });
      await assert.rejects(store.seed([{ id: 0, name: 'a', categoryId: 1 }]), StoreInputError);
      assert.deepEqual(ids(await listAll(store)), [1, 2, 3]);
      assert.equal((await store.create(newPet(0))).pet.id, 4);
    },
  },
  {
    name: 'reset: empty, and ids restart at 1',
    async run(store) {
      await createInOrder(store, 4);
      await store.seed([{ id: 100, name: 'x', categoryId: 1 }]);
      await store.reset();
      assert.deepEqual(await store.list({ limit: 100 }), []);
      assert.equal(await store.get(1), undefined);
      assert.equal((await store.create(newPet(0))).pet.id, 1);
    },
  },
  {
    name: 'close: idempotent; afterwards a create is refused as unavailable',
    async run(store) {
      await store.create(newPet(0));
      await store.close();
      await store.close();
      await assert.rejects(store.create(newPet(1)), StoreUnavailableError);
    },
  },
];

interface Backend {
  readonly name: string;
  readonly skip: string | false;
  /** A fresh, empty store. */
  open(): Promise<PetStore>;
  readonly pageVersion: boolean;
  setup?(): Promise<void>;
  teardown?(): Promise<void>;
}


let pg: PostgresServer | undefined;
const skipPostgres = skipUnless('PostgreSQL store contract tests', ['postgres']);

const BACKENDS: Backend[] = [
  { name: 'memory', skip: false, pageVersion: true, open: async () => openMemoryStore() },
  {
    name: 'file',
    skip: false,
    pageVersion: true,
    open: () => {
      const dir = tempDir();
      return openFileStore(join(dir, 'pets.json'), { logger: silentLogger });
    },
  },
  {
    name: 'postgres',
    skip: skipPostgres,
    pageVersion: false,
    async setup() {
      pg = await startPostgres();
    },
    async teardown() {
      await pg?.close();
    },
    async open() {
      // One database for the file; each case starts from an emptied table (reset is part of
      // the PetStore interface, and tested on its own above).
      const store = await openPostgresStore(`${(pg as PostgresServer).url}?query_timeout=10000`, { logger: silentLogger });
      await store.reset();
      return store;
    },
  },
];

for (const backend of BACKENDS) {
  describe(`${backend.name} store`, { skip: backend.skip }, () => {
    if (backend.setup) before(() => backend.setup?.());
    if (backend.teardown) after(() => backend.teardown?.());
    for (const c of CASES) {
      test(c.name, async () => {
        const store = await backend.open();
        try {
          await c.run(store);
        } finally {
          await store.close();
        }
      });
    }
    test(`${backend.pageVersion ? 'offers' : 'does not offer'} a page version (the page cache is ${backend.pageVersion ? 'on' : 'off'})`, async () => {
      const store = await backend.open();
      assert.equal(hasPageVersion(store), backend.pageVersion);
      await store.close();
    });
  });
}
