// One table of idempotent-create cases (src/store/contract.ts, createIdempotent), run against
// every store that implements it: memory, file and PostgreSQL (a real server, skipped with one
// line when it is not installed). Each store has its own injected clock, so expiry is exact.
// What only one backend does (journal lines, the key table, its schema) is tested beside it.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { ManualClock } from '../../src/core/clock.js';
import { silentLogger } from '../../src/core/index.js';
import type { NewPet } from '../../src/core/types.js';
import { newPetFingerprint, openFileStore, openMemoryStore, openPostgresStore } from '../../src/store/index.js';
import type { CreateOutcome, IdempotencyKey, PetStore, StoredPet } from '../../src/store/index.js';
import { tempDir } from '../support/bundle.js';
import { skipUnless } from '../support/engines.js';
import { startPostgres, type PostgresServer } from '../support/postgres.js';

const HOUR = 3_600_000;
const SCOPE_A = 'a'.repeat(64);
const SCOPE_B = 'b'.repeat(64);
const REX: NewPet = { name: 'Rex', categoryId: 1, status: 'available' };
const TOM: NewPet = { name: 'Tom', categoryId: 2 };

type KeyedStore = PetStore & Required<Pick<PetStore, 'createIdempotent'>>;

function idem(key: string, pet: NewPet, scope = SCOPE_A): IdempotencyKey {
  return { scope, key, fingerprint: newPetFingerprint(pet) };
}

function made(outcome: CreateOutcome): StoredPet {
  assert.ok(outcome.kind === 'created' || outcome.kind === 'replayed', `outcome ${outcome.kind}`);
  return outcome.stored;
}

async function allIds(store: PetStore): Promise<number[]> {
  return (await store.list({ limit: 100 })).map((p) => p.pet.id);
}

interface Case {
  readonly name: string;
  run(store: KeyedStore, clock: ManualClock): Promise<void>;
}

const CASES: Case[] = [
  {
    name: 'a key makes one pet; the same payload replays it byte for byte, another is a mismatch, another scope is its own',
    async run(store) {
      const first = await store.createIdempotent(REX, idem('k1', REX));
      assert.equal(first.kind, 'created');
      assert.equal(made(first).json, '{"id":1,"name":"Rex","categoryId":1,"status":"available"}');
      const again = await store.createIdempotent({ status: 'available', categoryId: 1, name: 'Rex' }, idem('k1', REX));
      assert.equal(again.kind, 'replayed');
      assert.equal(made(again).json, made(first).json);
      assert.deepEqual(made(again).pet, made(first).pet);
      assert.deepEqual(await store.createIdempotent(TOM, idem('k1', TOM)), { kind: 'mismatch' });
      const other = await store.createIdempotent(REX, idem('k1', REX, SCOPE_B));
      assert.equal(other.kind, 'created', 'another API key, the same value: its own pet');
      assert.equal(made(other).pet.id, 2);
      assert.deepEqual(await allIds(store), [1, 2]);
    },
  },
  {
    name: 'a replay or a mismatch takes no id: a create after them gets the next one',
    async run(store) {
      await store.createIdempotent(TOM, idem('k', TOM));
      for (let i = 0; i < 3; i++) await store.createIdempotent(TOM, idem('k', TOM));
      await store.createIdempotent(REX, idem('k', REX));
      assert.equal((await store.create(REX)).pet.id, 2);
      assert.equal(made(await store.createIdempotent(REX, idem('k2', REX))).pet.id, 3);
      assert.equal((await store.get(1))?.json, '{"id":1,"name":"Tom","categoryId":2}');
    },
  },
  {
    name: 'a key expires after the retention by the store\'s clock; the next use makes a new pet, and that one is replayed',
    async run(store, clock) {
      const first = made(await store.createIdempotent(REX, idem('k', REX))).pet.id;
      clock.advance(24 * HOUR - 1);
      assert.equal(made(await store.createIdempotent(REX, idem('k', REX))).pet.id, first, 'still live 1 ms before');
      assert.equal((await store.createIdempotent(TOM, idem('k', TOM))).kind, 'mismatch');
      clock.advance(1);
      const later = await store.createIdempotent(TOM, idem('k', TOM));
      assert.equal(later.kind, 'created', 'forgotten after 24 hours: a new pet, whatever the payload');
      assert.equal(made(later).pet.id, first + 1);
      clock.advance(HOUR);
      const replay = await store.createIdempotent(TOM, idem('k', TOM));
      assert.equal(replay.kind, 'replayed', 'the new use is remembered from its own time');
      assert.equal(made(replay).json, made(later).json);
      assert.equal((await store.createIdempotent(REX, idem('k', REX))).kind, 'mismatch');
      assert.equal((await store.get(first))?.pet.name, 'Rex', 'the first pet stays');
    },
  },
  {
    name: 'a reset forgets the keys with the pets',
    async run(store) {
      await store.createIdempotent(REX, idem('k', REX));
      await store.reset();
      const after = await store.createIdempotent(TOM, idem('k', TOM));
      assert.equal(after.kind, 'created');
      assert.equal(made(after).pet.id, 1);
    },
  },
  {
    name: 'keyed and plain creates share one id sequence, ascending; keys up to 255 characters with quotes and backslashes',
    async run(store) {
      const long = `"${'\\'.repeat(10)}${'~'.repeat(244)}`;
      assert.equal(long.length, 255);
      const outcomes: StoredPet[] = [];
      outcomes.push(await store.create(TOM));
      outcomes.push(made(await store.createIdempotent(REX, idem(long, REX))));
      outcomes.push(await store.create(TOM));
      outcomes.push(made(await store.createIdempotent(REX, idem(' ', REX))));
      assert.deepEqual(outcomes.map((s) => s.pet.id), [1, 2, 3, 4]);
      assert.equal(made(await store.createIdempotent(REX, idem(long, REX))).pet.id, 2);
      assert.equal(made(await store.createIdempotent(REX, idem(' ', REX))).pet.id, 4);
      assert.deepEqual(await allIds(store), [1, 2, 3, 4]);
    },
  },
  {
    name: '20 concurrent creates with one key: one pet; the others replay it or are in flight',
    async run(store) {
      const outcomes = await Promise.all(Array.from({ length: 20 }, () => store.createIdempotent(REX, idem('burst', REX))));
      const kinds = outcomes.map((o) => o.kind);
      assert.equal(kinds.filter((k) => k === 'created').length, 1, kinds.join());
      for (const o of outcomes) {
        assert.ok(o.kind !== 'mismatch', kinds.join());
        if (o.kind !== 'in_flight') assert.equal(o.stored.json, '{"id":1,"name":"Rex","categoryId":1,"status":"available"}');
      }
      assert.deepEqual(await allIds(store), [1]);
      assert.equal((await store.createIdempotent(REX, idem('burst', REX))).kind, 'replayed', 'once answered, a replay');
    },
  },
  {
    name: '30 concurrent creates with distinct keys: 30 pets with distinct ids, each key replaying its own',
    async run(store) {
      const pets = Array.from({ length: 30 }, (_, i): NewPet => ({ name: `p${i}`, categoryId: i }));
      const created = await Promise.all(pets.map((p, i) => store.createIdempotent(p, idem(`k${i}`, p))));
      const ids = created.map((o) => made(o).pet.id);
      assert.equal(new Set(ids).size, 30);
      for (const [i, p] of pets.entries()) {
        const replay = made(await store.createIdempotent(p, idem(`k${i}`, p)));
        assert.equal(replay.pet.id, ids[i]);
        assert.equal(replay.pet.name, `p${i}`);
      }
    },
  },
];

interface Backend {
  readonly name: string;
  readonly skip: string | false;
  /** A fresh, empty store on this clock, keys kept 24 hours. */
  open(clock: ManualClock): Promise<KeyedStore>;
  setup?(): Promise<void>;
  teardown?(): Promise<void>;
}


let pg: PostgresServer | undefined;

const BACKENDS: Backend[] = [
  { name: 'memory', skip: false, open: async (clock) => openMemoryStore({ clock }) },
  {
    name: 'file',
    skip: false,
    open: (clock) => {
      const dir = tempDir();
      return openFileStore(join(dir, 'pets.json'), { logger: silentLogger, clock });
    },
  },
  {
    name: 'postgres',
    skip: skipUnless('PostgreSQL idempotency contract tests', ['postgres']),
    async setup() {
      pg = await startPostgres();
    },
    async teardown() {
      await pg?.close();
    },
    async open(clock) {
      const store = await openPostgresStore(`${(pg as PostgresServer).url}?query_timeout=10000`, { logger: silentLogger, clock });
      await store.reset();
      return store as KeyedStore;
    },
  },
];

for (const backend of BACKENDS) {
  describe(`${backend.name} store: idempotent creates`, { skip: backend.skip }, () => {
    if (backend.setup) before(() => backend.setup?.());
    if (backend.teardown) after(() => backend.teardown?.());
    for (const c of CASES) {
      test(c.name, async () => {
        const clock = new ManualClock();
        const store = await backend.open(clock);
        assert.equal(typeof store.createIdempotent, 'function');
        try {
          await c.run(store, clock);
        } finally {
          await store.close();
        }
      });
    }
  });
}
