// The file store's optional observer (for metrics): batches, journal size, compactions.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { silentLogger } from '../../src/core/index.js';
import { openFileStore, type StoreObserver } from '../../src/store/index.js';
import { tempDir } from '../support/bundle.js';

function recorder(): StoreObserver & { batches: number[]; journal: number[]; compactions: boolean[]; seconds: number[] } {
  const r = {
    batches: [] as number[],
    journal: [] as number[],
    compactions: [] as boolean[],
    seconds: [] as number[],
    batchWritten(size: number, seconds: number) {
      r.batches.push(size);
      r.seconds.push(seconds);
    },
    journalBytes(bytes: number) {
      r.journal.push(bytes);
    },
    compacted(ok: boolean) {
      r.compactions.push(ok);
    },
  };
  return r;
}

test('each durable batch is reported with its size, and the journal with its length', async () => {
  const file = join(tempDir(), 'pets.json');
  const seen = recorder();
  const store = await openFileStore(file, { logger: silentLogger, observer: seen });
  try {
    assert.deepEqual(seen.journal, [0], 'the journal size is known from the start');
    // Created in one turn of the event loop: they share one write.
    await Promise.all([1, 2, 3].map((i) => store.create({ name: `p${i}`, categoryId: i })));
    await store.create({ name: 'alone', categoryId: 4 });
    assert.deepEqual(seen.batches, [3, 1]);
    assert.ok(seen.seconds.every((s) => s >= 0 && Number.isFinite(s)));
    const last = seen.journal.at(-1) ?? 0;
    assert.ok(last > 0 && seen.journal.length === 3, `journal sizes ${seen.journal.join(',')}`);
  } finally {
    await store.close();
  }
});

test('a compaction is reported, and the journal size drops after it', async () => {
  const file = join(tempDir(), 'pets.json');
  const seen = recorder();
  const store = await openFileStore(file, { logger: silentLogger, observer: seen, compactMinBytes: 1 });
  try {
    await store.create({ name: 'first', categoryId: 1 });
    await store.create({ name: 'second', categoryId: 2 });
    await store.close();
    assert.ok(seen.compactions.length >= 1 && seen.compactions.every((ok) => ok), `compactions ${seen.compactions.join(',')}`);
    const j = seen.journal;
    assert.ok(j.some((b, i) => i > 0 && b < (j[i - 1] as number)), `the journal shrinks after a compaction: ${j.join(',')}`);
  } finally {
    await store.close();
  }
});

test('without an observer nothing is reported and nothing changes', async () => {
  const file = join(tempDir(), 'pets.json');
  const store = await openFileStore(file, { logger: silentLogger });
  try {
    const pet = await store.create({ name: 'quiet', categoryId: 1 });
    assert.equal(pet.pet.id, 1);
  } finally {
    await store.close();
  }
});
