// Small file-system helpers shared by the journal and the snapshot code.
import { mkdir, unlink } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { FileHandle } from 'node:fs/promises';
import { errorCode, fsyncDir } from '../../core/index.js';

export { fsyncDir } from '../../core/index.js';

/** The disk operations a test can make fail through FileStoreOptions.beforeIo. */
export type DiskOp = 'journal-write' | 'journal-sync' | 'snapshot-write' | 'rotate';
export type IoHook = ((op: DiskOp) => void) | undefined;

/** Writes all of `data` at `position`: a regular file may accept only part of a write. */
export async function writeAll(handle: FileHandle, data: Buffer, position: number): Promise<void> {
  let done = 0;
  while (done < data.length) {
    const { bytesWritten } = await handle.write(data, done, data.length - done, position + done);
    if (bytesWritten === 0) throw new Error('write made no progress');
    done += bytesWritten;
  }
}

/**
 * Creates `dir` and any missing parents, durably: a new directory's name lives in its
 * parent, so each parent of a directory created here is fsynced too.
 */
export async function makeDir(dir: string): Promise<void> {
  const first = await mkdir(dir, { recursive: true });
  if (first === undefined) return;
  for (let d = dir; d !== dirname(d); d = dirname(d)) {
    await fsyncDir(dirname(d));
    if (d === first) return;
  }
}

/** Unlinks a file; a file that is already gone is fine. */
export async function unlinkIfPresent(path: string): Promise<void> {
  try {
    await unlink(path);
  } catch (err) {
    if (errorCode(err) !== 'ENOENT') throw err;
  }
}

/** Every path a file store uses, derived from the data file. */
export interface StorePaths {
  /** The data file as given by the caller, for messages. */
  readonly given: string;
  readonly snapshot: string;
  readonly dir: string;
  readonly journal: string;
  /** The journal rotated away while a compaction writes the snapshot that covers it. */
  readonly oldJournal: string;
  readonly lock: string;
  /** Where a snapshot is written before it is renamed over the data file. */
  readonly tmp: string;
}
