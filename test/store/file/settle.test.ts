// Every operation the file store takes is settled, even when its writer throws unexpectedly.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { openFileStore, StoreUnavailableError } from '../../../src/store/index.js';
import type { NewPet } from '../../../src/core/types.js';
import { tempDir } from '../../support/bundle.js';
import { silentLogger } from '../../../src/core/index.js';

// A seed is taken as given from an embedder: a pet whose field throws when read makes the
// writer throw while it plans the batch, with two other clients' creates in the same batch.
test('file store: a batch whose writer throws answers every operation, and stores nothing of it', { timeout: 20_000 }, async (t) => {
  const dir = tempDir();
  const file = join(dir, 'pets.json');
  let store = await openFileStore(file, { logger: silentLogger });
  await store.create({ name: 'kept', categoryId: 1 });
  const poisoned = { categoryId: 1, get name(): string { throw new Error('boom'); } } as NewPet;
  const batch = await Promise.allSettled([
    store.create({ name: 'first', categoryId: 1 }),
    store.seed([poisoned]),
    store.create({ name: 'second', categoryId: 1 }),
  ]);
  for (const r of batch) assert.ok(r.status === 'rejected' && r.reason instanceof StoreUnavailableError, String(r.status === 'rejected' ? r.reason : 'fulfilled'));
  assert.equal(store.count, 1, 'nothing of the failed batch is visible');
  const next = await store.create({ name: 'after', categoryId: 1 });
  assert.equal(next.pet.id, 2, 'the ids of the failed batch are given out again');
  await store.close();
  store = await openFileStore(file, { logger: silentLogger });
  assert.deepEqual(store.list({ limit: 10 }).map((p) => p.pet.name), ['kept', 'after']);
  await store.close();
});
