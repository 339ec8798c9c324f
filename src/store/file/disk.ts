// Small file-system helpers shared by the journal and the snapshot code.
import { mkdir, stat, unlink } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { FileHandle } from 'node:fs/promises';
import { describeError, errorCode, fsyncDir } from '../../core/index.js';

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
 *
 * Not `mkdir(dir, { recursive: true })`: under a parent that exists but where nothing can be
 * created (/proc, /sys), node 20's recursive mkdir retries for ever at full CPU. The missing
 * directories are found first, from the nearest ancestor that exists (which must be a
 * directory), then made one at a time, so such a parent fails at once with its own error.
 */
export async function makeDir(dir: string): Promise<void> {
  const missing: string[] = [];
  for (let d = dir; ; d = dirname(d)) {
    const found = await stat(d).catch((err: unknown) => {
      const code = errorCode(err);
      if (code === 'ENOENT' || code === 'ENOTDIR') return undefined; // ENOTDIR: an ancestor is a file, found below
      throw err;
    });
    if (found !== undefined) {
      if (!found.isDirectory()) throw Object.assign(new Error(`${d} is not a directory`), { code: 'ENOTDIR' });
      break;
    }
    if (d === dirname(d)) break; // the root cannot be missing; never loop
    missing.push(d);
  }
  for (let i = missing.length - 1; i >= 0; i--) {
    const d = missing[i] as string;
    try {
      await mkdir(d);
    } catch (err) {
      // Made meanwhile by someone else: fine, if it is a directory.
      if (errorCode(err) === 'EEXIST' && (await stat(d)).isDirectory()) continue;
      // The errno code is kept: callers tell a full or read-only disk apart by it.
      const message = `cannot create directory ${d} in ${dirname(d)} (${errorCode(err) ?? describeError(err)})`;
      throw Object.assign(new Error(message, { cause: err }), { code: errorCode(err) });
    }
    await fsyncDir(dirname(d));
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
