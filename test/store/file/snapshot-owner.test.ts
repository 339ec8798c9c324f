// A snapshot is renamed over the data file only while the data file is still ours to write:
// a process whose lock was taken over during a compaction must not replace the new holder's file.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { silentLogger } from '../../../src/core/log.js';
import type { StorePaths } from '../../../src/store/file/disk.js';
import { KeyTable } from '../../../src/store/idempotency.js';
import { PetIndex } from '../../../src/store/pet-index.js';
import { readSnapshot, writeSnapshot } from '../../../src/store/file/snapshot.js';
import { tempDir } from '../../support/bundle.js';

function pathsIn(dir: string): StorePaths {
  const snapshot = join(dir, 'pets.json');
  return { given: snapshot, snapshot, dir, journal: `${snapshot}.journal`, oldJournal: `${snapshot}.journal.old`, lock: `${snapshot}.lock`, tmp: `${snapshot}.tmp` };
}

test('writeSnapshot: the snapshot replaces the data file while it is ours, and is discarded once it is not', async () => {
  const paths = pathsIn(tempDir());
  const index = new PetIndex();
  index.load([{ id: 1, name: 'Rex', categoryId: 1 }, { id: 2, name: 'Tom', categoryId: 2 }], 3);
  await writeSnapshot(paths, index.view(), new KeyTable(1000).cursor(0), undefined, silentLogger, () => undefined);
  assert.equal(readSnapshot(paths).pets.length, 2);

  const before = readFileSync(paths.snapshot);
  const other = new PetIndex();
  other.load([{ id: 1, name: 'Old', categoryId: 1 }], 2);
  await assert.rejects(
    writeSnapshot(paths, other.view(), new KeyTable(1000).cursor(0), undefined, silentLogger, () => {
      throw new Error('the lock was taken over');
    }),
    /taken over/,
  );
  assert.deepEqual(readFileSync(paths.snapshot), before, 'the data file is untouched');
  assert.equal(existsSync(paths.tmp), false, 'the unused snapshot is removed');
});
