// One writer per data file: `<file>.lock`, held by a heartbeat. This file is the lock as held
// (DataLock); acquire-lock.ts takes it, lock-file.ts is the file both look at.
//
// - Taking it needs no free space: the lock is an empty file created with O_EXCL (an inode,
//   no data block); who holds it is written into it afterwards only if the disk has room,
//   and only for messages and the fast check below. Nothing is written aside, so a failed
//   start leaves no temporary file.
// - The holder refreshes the file's mtime every staleMs/5 (futimes) and keeps it open, so its
//   inode number cannot be reused by another lock while it lives. A lock not refreshed for
//   staleMs is stale and is taken over. A lock written in this boot and this pid namespace
//   names a pid that can be checked: a dead holder's lock is taken over at once (a crash and
//   restart waits for nothing); otherwise (another container, machine or an empty lock) a
//   start watches the heartbeat for up to staleMs: it goes on, the start is refused; it
//   stops, the lock is taken over.
// - Before each batch the holder checks that the lock at the path is still its own inode. A
//   lock removed under it is put back; a lock taken by another process makes it stop
//   writing for good (503 to creates, an error logged): that process now owns the file.
// - Guarantees hold on a local file system (one kernel sees every mtime and rename), not on
//   NFS or other shared network file systems.
import { fstatSync, futimesSync, openSync, unlinkSync, constants } from 'node:fs';
import type { BigIntStats } from 'node:fs';
import { describeHolder } from './lock-holder.js';
import type { Holder } from './lock-holder.js';
import { closeQuietly, createLockFile, readHolder, sameFile, statIfPresent, type Identity } from './lock-file.js';
import { describeError, errorCode, systemClock, type Clock, type Logger } from '../../core/index.js';

/** How long a lock may go without a heartbeat before it counts as abandoned. */
export const DEFAULT_LOCK_STALE_MS = 10_000;
export const MIN_LOCK_STALE_MS = 100;
export const MAX_LOCK_STALE_MS = 3_600_000;

/** The lock is held by another live process (or another store of this one). */
export class LockHeldError extends Error {
  constructor(readonly holder: string) {
    super(`locked by ${holder}`);
  }
}

export interface LockOptions {
  logger: Logger;
  /** Default DEFAULT_LOCK_STALE_MS. */
  staleMs?: number;
  clock?: Clock;
}

/**
 * Locks held by this process, by the real path of the lock file. The one piece of module
 * state in the service, on purpose: a lock is a property of the process, and it is how two
 * embedded instances in one process (even through a symlinked directory) are kept off the
 * same data file.
 */
export const heldHere = new Map<string, DataLock>();

/** A lock held by this process; see the top of the file. */
export class DataLock {
  readonly path: string;
  readonly #key: string;
  readonly #holder: Holder;
  readonly #logger: Logger;
  readonly #clock: Clock;
  readonly #refreshMs: number;
  #fd: number;
  #id: Identity;
  /** Wall time of the last heartbeat that found the lock ours. */
  #refreshedAt: number;
  /** Why the lock is no longer ours; set once, for good. */
  #lost: string | undefined;
  #failing = false;
  readonly #timer: NodeJS.Timeout;

  constructor(path: string, key: string, created: { fd: number; id: Identity }, holder: Holder, staleMs: number, opts: LockOptions) {
    this.path = path;
    this.#key = key;
    this.#holder = holder;
    this.#logger = opts.logger;
    this.#clock = opts.clock ?? systemClock;
    this.#refreshMs = staleMs / 5;
    this.#fd = created.fd;
    this.#id = created.id;
    this.#refreshedAt = this.#clock.now();
    this.#timer = setInterval(() => this.#refresh(), this.#refreshMs).unref();
  }

  /** True once another process has taken the lock: this one must never write again. */
  get lost(): boolean {
    return this.#lost !== undefined;
  }

  /**
   * Before each batch: undefined if the lock is still ours, else why writing is refused.
   * One stat in the common case; a missing or foreign lock, or a heartbeat overdue (the
   * event loop was held up, the disk fails), is looked at in full first.
   */
  problem(): string | undefined {
    if (this.#lost !== undefined) return this.#lost;
    try {
      const st = statIfPresent(this.path);
      if (st !== undefined && sameFile(st, this.#id) && !this.#overdue()) return undefined;
      this.#refresh();
      if (this.#lost !== undefined) return this.#lost;
      if (!this.#overdue()) return undefined;
      // Gone with its directory: the journal write fails as well, and the store's rewrite
      // of its files makes the directory and puts the lock back (reassert).
      if (statIfPresent(this.path) === undefined) return undefined;
    } catch (err) {
      return `its lock ${this.path} cannot be checked: ${describeError(err)}`;
    }
    return `its lock ${this.path} cannot be refreshed`;
  }

  /** Before the store rewrites its files: the lock must be ours, put back if it was removed. */
  reassert(): void {
    const problem = this.problem();
    if (problem !== undefined) throw new Error(problem);
    if (statIfPresent(this.path) === undefined) throw new Error(`the lock ${this.path} cannot be put back`);
  }

  /** Removes the lock if it is still ours; a problem is logged, not thrown (we are closing). */
  release(): void {
    clearInterval(this.#timer);
    heldHere.delete(this.#key);
    try {
      const st = statIfPresent(this.path);
      if (this.#lost === undefined && st !== undefined && sameFile(st, this.#id)) unlinkSync(this.path);
      else if (st !== undefined) this.#logger.log('warn', 'data file lock is no longer ours; leaving it', { lock: this.path });
    } catch (err) {
      this.#logger.log('warn', 'could not remove the data file lock', { lock: this.path, error: describeError(err) });
    }
    closeQuietly(this.#fd);
  }

  /** Same inode as ours, open or not. */
  holds(id: Identity): boolean {
    return sameFile(id, this.#id);
  }

  #overdue(): boolean {
    return this.#clock.now() - this.#refreshedAt > 2 * this.#refreshMs;
  }

  /**
   * The heartbeat. mtime first, then the check that the path is still ours: a process that
   * takes a stale lock over renames it aside and looks at its mtime again, so either it sees
   * this refresh and gives the lock back, or this check sees the lock gone.
   */
  #refresh(): void {
    if (this.#lost !== undefined) return;
    try {
      const now = this.#clock.now();
      let touchError: unknown;
      try {
        futimesSync(this.#fd, now / 1000, now / 1000);
      } catch (err) {
        touchError = err; // the path may hold a copy of our lock on a repaired file system
      }
      const st = statIfPresent(this.path);
      if (st === undefined) {
        if (!this.#putBack()) return;
        touchError = undefined; // a new file: its mtime is now
      } else if (!sameFile(st, this.#id)) {
        if (!this.#adoptOrLose(st)) return;
        futimesSync(this.#fd, now / 1000, now / 1000);
        touchError = undefined;
      }
      if (touchError !== undefined) throw touchError;
      this.#refreshedAt = now;
      if (this.#failing) this.#logger.log('info', 'data file lock refreshed again', { lock: this.path });
      this.#failing = false;
    } catch (err) {
      if (!this.#failing) this.#logger.log('warn', 'cannot refresh the data file lock', { lock: this.path, error: describeError(err) });
      this.#failing = true;
    }
  }

  /** The lock was removed (by hand, or with its directory): take it again, if nobody else has. True if ours again. */
  #putBack(): boolean {
    let created: { fd: number; id: Identity } | undefined;
    try {
      created = createLockFile(this.path, this.#holder);
    } catch (err) {
      const code = errorCode(err);
      if (code === 'ENOENT' || code === 'ENOTDIR') return false; // the directory is gone too: the store rebuilds it
      throw err;
    }
    if (created === undefined) {
      // Someone created one between our stat and our create.
      const st = statIfPresent(this.path);
      return st !== undefined && this.#adoptOrLose(st);
    }
    closeQuietly(this.#fd);
    this.#fd = created.fd;
    this.#id = created.id;
    this.#logger.log('warn', 'data file lock was removed; it has been taken again', { lock: this.path });
    return true;
  }

  /** Another inode at the path: ours if it carries our token (a repaired or copied file system). */
  #adoptOrLose(st: BigIntStats): boolean {
    const holder = readHolder(this.path);
    if (holder?.token === this.#holder.token) {
      const fd = openSync(this.path, constants.O_RDONLY);
      closeQuietly(this.#fd);
      this.#fd = fd;
      this.#id = fstatSync(fd, { bigint: true });
      return true;
    }
    this.#lost = `its lock ${this.path} has been taken by ${describeHolder(holder)}; this process no longer writes the data file`;
    clearInterval(this.#timer);
    this.#logger.log('error', 'data file lock taken by another process; refusing every write from now on', {
      lock: this.path,
      holder: describeHolder(holder),
      inode: String(st.ino),
    });
    return false;
  }
}
