// The lock file itself, as both the holder (lock.ts) and a start taking it (acquire-lock.ts) see
// it: made with O_EXCL, its holder written in it, looked at (stat, open, read) without ever
// blocking on whatever was put in its place.
import { closeSync, fstatSync, openSync, readSync, statSync, writeSync, fsyncSync, constants } from 'node:fs';
import type { BigIntStats } from 'node:fs';
import { dirname } from 'node:path';
import { formatHolder, parseHolder } from './lock-holder.js';
import type { Holder } from './lock-holder.js';
import { errorCode, fsyncDirSync, readRegularFileSync } from '../../core/index.js';

/** True if a process with this pid exists (EPERM: it exists but belongs to someone else). */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return errorCode(err) === 'EPERM';
  }
}

export interface Identity {
  readonly dev: bigint;
  readonly ino: bigint;
}

export const sameFile = (a: Identity, b: Identity): boolean => a.dev === b.dev && a.ino === b.ino;

/** The file at the lock path, open (when it can be opened), with the holder written in it. */
export interface Examined {
  readonly fd: number | undefined;
  readonly st: BigIntStats;
  readonly holder: Holder | undefined;
}

/** The lock at `path` as it is now; undefined if there is none. */
export function examine(path: string): Examined | undefined {
  let fd: number;
  try {
    // O_NONBLOCK: a FIFO put in its place opens at once (and is judged by its mtime alone).
    fd = openSync(path, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0));
  } catch (err) {
    const code = errorCode(err);
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    // Unreadable (EACCES...): judged by its stat and heartbeat alone.
    const st = statIfPresent(path);
    return st === undefined ? undefined : { fd: undefined, st, holder: undefined };
  }
  try {
    const st = fstatSync(fd, { bigint: true });
    return { fd, st, holder: st.isFile() ? holderIn(fd, st.size) : undefined };
  } catch (err) {
    closeQuietly(fd);
    throw err;
  }
}

function holderIn(fd: number, size: bigint): Holder | undefined {
  if (size > 64n * 1024n) return undefined;
  try {
    const buf = Buffer.alloc(Number(size));
    const n = readSync(fd, buf, 0, buf.length, 0);
    return parseHolder(buf.subarray(0, n).toString('utf8'));
  } catch {
    return undefined; // unreadable: judged by its heartbeat
  }
}

/** Creates the lock file; undefined if the name is taken. Needs an inode, not a data block. */
export function createLockFile(path: string, holder: Holder): { fd: number; id: Identity } | undefined {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDWR | constants.O_CREAT | constants.O_EXCL, 0o644);
  } catch (err) {
    if (errorCode(err) === 'EEXIST') return undefined;
    throw err;
  }
  try {
    // Who holds it, for messages and the fast check of a dead holder; the lock works without
    // it (a full disk leaves it empty). Synced, with the directory, so that it survives a
    // power cut or a file system repaired from a copy.
    try {
      writeSync(fd, formatHolder(holder));
      fsyncSync(fd);
      fsyncDirSync(dirname(path));
    } catch {
      // ENOSPC, EDQUOT, EIO: the empty lock is judged by its heartbeat alone.
    }
    return { fd, id: fstatSync(fd, { bigint: true }) };
  } catch (err) {
    closeQuietly(fd);
    throw err;
  }
}

export function readHolder(path: string): Holder | undefined {
  try {
    // A FIFO put in its place must not block the start: only a small regular file is read.
    return parseHolder(readRegularFileSync(path, 64 * 1024).toString('utf8'));
  } catch {
    return undefined; // gone or unreadable: judged by its heartbeat
  }
}

/** The lock's stat; undefined if it is missing, or its directory is (ENOTDIR: replaced by a file). */
export function statIfPresent(path: string): BigIntStats | undefined {
  try {
    return statSync(path, { bigint: true, throwIfNoEntry: false });
  } catch (err) {
    if (errorCode(err) === 'ENOTDIR') return undefined;
    throw err;
  }
}

export function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // already closed; nothing was pending on an empty lock file
  }
}
