// Opening a file store: directory, lock, snapshot, journals (`.old` first), then the
// running FileStore. Anything that stops the start is a StoreOpenError naming the file.
import { dirname, resolve } from 'node:path';
import { fsyncDir, makeDir, unlinkIfPresent } from './disk.js';
import type { StorePaths } from './disk.js';
import { StoreOpenError } from '../errors.js';
import { FileStore } from './file-store.js';
import type { FileStoreOptions } from './file-store.js';
import { KeyTable } from '../idempotency.js';
import { PetIndex } from '../pet-index.js';
import { JournalWriter, ReplayCheck, replayJournal } from './journal.js';
import { acquireLock } from './acquire-lock.js';
import { LockHeldError } from './lock.js';
import type { DataLock } from './lock.js';
import { readSnapshot } from './snapshot.js';
import type { LocalPetStore } from '../contract.js';
import { DEFAULT_IDEMPOTENCY_RETENTION_HOURS, describeError, systemClock } from '../../core/index.js';

function storePaths(file: string): StorePaths {
  const snapshot = resolve(file);
  return {
    given: file,
    snapshot,
    dir: dirname(snapshot),
    journal: `${snapshot}.journal`,
    oldJournal: `${snapshot}.journal.old`,
    lock: `${snapshot}.lock`,
    tmp: `${snapshot}.tmp`,
  };
}

/** Opens (or creates) the store at `file`; StoreOpenError if it cannot be used. */
export async function openFileStore(file: string, opts: FileStoreOptions): Promise<LocalPetStore> {
  const paths = storePaths(file);
  const { logger } = opts;
  try {
    await makeDir(paths.dir);
  } catch (err) {
    throw new StoreOpenError(file, `Cannot create the directory of data file ${file}: ${describeError(err)}.`, { cause: err });
  }
  let lock: DataLock;
  try {
    lock = await acquireLock(paths.lock, { logger, staleMs: opts.lockStaleMs });
  } catch (err) {
    if (err instanceof LockHeldError) {
      throw new StoreOpenError(file, `Data file ${file} is in use by ${err.holder}.`);
    }
    throw new StoreOpenError(file, `Cannot lock data file ${file}: ${describeError(err)}.`, { cause: err });
  }
  try {
    return await loadStore(paths, opts, lock);
  } catch (err) {
    lock.release();
    if (err instanceof StoreOpenError) throw err;
    throw new StoreOpenError(file, `Cannot open data file ${file}: ${describeError(err)}.`, { cause: err });
  }
}

async function loadStore(paths: StorePaths, opts: FileStoreOptions, lock: DataLock): Promise<FileStore> {
  const snapshot = readSnapshot(paths);
  const index = new PetIndex();
  index.load(snapshot.pets, snapshot.nextId);
  const clock = opts.clock ?? systemClock;
  const keys = new KeyTable(opts.idempotencyRetentionMs ?? DEFAULT_IDEMPOTENCY_RETENTION_HOURS * 3_600_000);
  const now = clock.now();
  for (const { id, record } of snapshot.keys) keys.load(record, id, now);
  const check = new ReplayCheck(keys, now);
  const old = replayJournal(paths.oldJournal, paths, index, false, opts.logger, check);
  const active = replayJournal(paths.journal, paths, index, true, opts.logger, check);
  if (check.mismatch !== undefined) throw check.mismatch;
  const journal = await JournalWriter.open(paths.journal, active.goodBytes, active.totalBytes);
  try {
    if (!active.existed) await fsyncDir(paths.dir);
    // A snapshot left half-written by a crash is of no use; the data file itself is intact.
    await unlinkIfPresent(paths.tmp);
  } catch (err) {
    await journal.close();
    throw err;
  }
  opts.logger.log('info', 'data file opened', {
    file: paths.given,
    pets: index.count,
    nextId: index.nextId,
    idempotencyKeys: keys.size,
    // A compaction was cut short (by a crash, or a disk error) and is finished later.
    rotatedJournal: old.existed,
  });
  return new FileStore(paths, opts, index, keys, clock, journal, {
    snapshotBytes: snapshot.bytes,
    oldJournalBytes: old.existed ? old.totalBytes : undefined,
  }, lock);
}
