// One writer per data file: `<file>.lock`, held by a heartbeat.
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
import { closeSync, fstatSync, futimesSync, linkSync, openSync, readSync, readdirSync, realpathSync, renameSync, statSync, unlinkSync, writeSync, fsyncSync, constants } from 'node:fs';
import type { BigIntStats } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { basename, dirname, join } from 'node:path';
import { describeHolder, formatHolder, judgeLock, parseHolder, thisProcess } from './lock-holder.js';
import type { Holder } from './lock-holder.js';
import { describeError, errorCode, fsyncDirSync, readRegularFileSync, systemClock, type Clock, type Logger } from '../../core/index.js';

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
const heldHere = new Map<string, DataLock>();

/** True if a process with this pid exists (EPERM: it exists but belongs to someone else). */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return errorCode(err) === 'EPERM';
  }
}

interface Identity {
  readonly dev: bigint;
  readonly ino: bigint;
}

const sameFile = (a: Identity, b: Identity): boolean => a.dev === b.dev && a.ino === b.ino;

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

/**
 * Takes the lock on `lockPath` (its directory exists). Throws LockHeldError if a live
 * process holds it; takes over, with a warning, a lock whose holder is gone or has stopped
 * refreshing it; waits (at most staleMs) when only the heartbeat can tell.
 */
export async function acquireLock(lockPath: string, opts: LockOptions): Promise<DataLock> {
  const staleMs = opts.staleMs ?? DEFAULT_LOCK_STALE_MS;
  const clock = opts.clock ?? systemClock;
  const key = join(realpathSync(dirname(lockPath)), basename(lockPath));
  if (heldHere.has(key)) throw new LockHeldError(`process ${process.pid} (this process)`);
  const self = thisProcess();
  const holder: Holder = { ...self, token: randomUUID() };
  let watched: { id: Identity; mtimeNs: bigint; since: number } | undefined;
  for (let changes = 0; changes < 20; ) {
    const created = createLockFile(lockPath, holder);
    if (created !== undefined) {
      const lock = new DataLock(lockPath, key, created, holder, staleMs, opts);
      heldHere.set(key, lock);
      removeLeftovers(lockPath, opts.logger);
      return lock;
    }
    // The lock found, kept open while it is judged and taken over: its inode number cannot
    // be given to a new lock meanwhile, so "the same file" below means the same lock, and
    // the holder judged is the one written in that very file.
    const seen = examine(lockPath);
    if (seen === undefined) {
      changes++;
      continue;
    }
    try {
      const st = seen.st;
      for (const held of heldHere.values()) {
        if (held.holds(st)) throw new LockHeldError(`process ${process.pid} (this process)`);
      }
      let verdict = judgeLock({ holder: seen.holder, mtimeMs: Number(st.mtimeNs / 1_000_000n) }, self, clock.now(), staleMs, isProcessAlive);
      if (verdict.kind === 'held') throw new LockHeldError(describeHolder(seen.holder));
      if (verdict.kind === 'watch') {
        if (watched !== undefined && (!sameFile(watched.id, st) || watched.mtimeNs !== st.mtimeNs)) {
          throw new LockHeldError(describeHolder(seen.holder));
        }
        watched ??= { id: st, mtimeNs: st.mtimeNs, since: clock.monotonic() };
        const waited = clock.monotonic() - watched.since;
        if (waited < staleMs) {
          await new Promise((done) => setTimeout(done, Math.min(staleMs - waited, staleMs / 20) + 1));
          continue;
        }
        verdict = { kind: 'free', reason: `not refreshed for ${Math.round(waited)} ms` };
      }
      const outcome = takeOver(lockPath, st, staleMs);
      if (outcome === 'busy') throw new LockHeldError('another process taking it over');
      if (outcome === 'removed') {
        opts.logger.log('warn', 'taking over a stale data file lock', {
          lock: lockPath,
          stalePid: seen.holder?.pid ?? 'unknown',
          reason: verdict.reason,
        });
      }
    } finally {
      if (seen.fd !== undefined) closeQuietly(seen.fd);
    }
    watched = undefined;
    changes++;
  }
  throw new Error(`could not take the lock ${lockPath}: it keeps changing`);
}

/** The file at the lock path, open (when it can be opened), with the holder written in it. */
interface Examined {
  readonly fd: number | undefined;
  readonly st: BigIntStats;
  readonly holder: Holder | undefined;
}

/** The lock at `path` as it is now; undefined if there is none. */
function examine(path: string): Examined | undefined {
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
function createLockFile(path: string, holder: Holder): { fd: number; id: Identity } | undefined {
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

/**
 * Removes the stale lock examined as `examined` (kept open by the caller), one takeover at a
 * time: under `<lock>.takeover`, made with O_EXCL. Without it, two starts that judged the same
 * stale lock could each rename "it" aside, the second moving the lock the first had just
 * made; and a lock released and made again by a live run between a look and a rename would
 * be moved. Under it, the lock is renamed aside only if the path still holds the very file
 * judged, unchanged; only its holder, gone or silent for the stale time, could still touch
 * it, and if it refreshed it after all in that instant it is put back.
 * 'removed': done; 'changed': the path holds something else now (judge again); 'busy':
 * another takeover is under way.
 */
function takeOver(lockPath: string, examined: BigIntStats, staleMs: number): 'removed' | 'changed' | 'busy' {
  const guard = `${lockPath}.takeover`;
  let fd: number;
  try {
    fd = openSync(guard, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o644);
  } catch (err) {
    if (errorCode(err) !== 'EEXIST') throw err;
    return clearDeadGuard(guard, staleMs) ? 'changed' : 'busy';
  }
  try {
    try {
      writeSync(fd, formatHolder({ ...thisProcess(), token: randomUUID() }));
    } catch {
      // a full disk: the guard is judged by its age alone
    }
    const now = statIfPresent(lockPath);
    if (now === undefined || !sameFile(now, examined) || now.mtimeNs !== examined.mtimeNs) return 'changed';
    const aside = `${lockPath}.stale-${process.pid}-${randomUUID()}`;
    try {
      renameSync(lockPath, aside);
    } catch (err) {
      if (errorCode(err) === 'ENOENT') return 'changed'; // its holder removed it
      throw err;
    }
    const moved = statSync(aside, { bigint: true });
    const same = sameFile(moved, examined) && moved.mtimeNs === examined.mtimeNs;
    if (!same) {
      try {
        linkSync(aside, lockPath);
      } catch (err) {
        // Taken meanwhile (EEXIST): that lock stands, and the holder we moved sees it is no
        // longer its own before it writes again.
        if (errorCode(err) !== 'EEXIST') throw err;
      }
    }
    unlinkSync(aside);
    return same ? 'removed' : 'changed';
  } finally {
    closeQuietly(fd);
    try {
      unlinkSync(guard);
    } catch {
      // removed as the leftover of a dead run: nothing to do
    }
  }
}

/**
 * A takeover guard that is there: removed (true) if the run that made it is gone (its pid,
 * where it can be checked) or not touched for the stale time (a takeover lasts a few system
 * calls); else false, it is in use.
 */
function clearDeadGuard(guard: string, staleMs: number): boolean {
  const seen = examine(guard);
  if (seen === undefined) return true;
  try {
    const verdict = judgeLock({ holder: seen.holder, mtimeMs: Number(seen.st.mtimeNs / 1_000_000n) }, thisProcess(), Date.now(), staleMs, isProcessAlive);
    if (verdict.kind !== 'free') return false;
    const now = statIfPresent(guard);
    if (now !== undefined && sameFile(now, seen.st)) unlinkSync(guard);
    return true;
  } catch (err) {
    if (errorCode(err) === 'ENOENT') return true;
    throw err;
  } finally {
    if (seen.fd !== undefined) closeQuietly(seen.fd);
  }
}

/**
 * Once the lock is ours: removes what earlier runs may have left beside it (a start that
 * died between its rename aside and its unlink; older versions' `.tmp` files). A file set
 * aside is only removed while no takeover is under way (the guard taken): another run's
 * takeover may be about to put back what it set aside.
 */
function removeLeftovers(lockPath: string, logger: Logger): void {
  const name = basename(lockPath);
  const dir = dirname(lockPath);
  const guard = `${lockPath}.takeover`;
  try {
    const entries = readdirSync(dir).filter((e) => e.startsWith(`${name}.`) && (e.includes('.stale-') || e.endsWith('.tmp')));
    if (entries.length === 0) return;
    let fd: number | undefined;
    try {
      fd = openSync(guard, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o644);
    } catch (err) {
      if (errorCode(err) !== 'EEXIST') throw err;
    }
    try {
      for (const entry of entries) {
        if (entry.endsWith('.tmp') || fd !== undefined) unlinkSync(join(dir, entry));
      }
    } finally {
      if (fd !== undefined) {
        closeQuietly(fd);
        unlinkSync(guard);
      }
    }
  } catch (err) {
    logger.log('warn', 'could not remove leftover lock files', { lock: lockPath, error: describeError(err) });
  }
}

function readHolder(path: string): Holder | undefined {
  try {
    // A FIFO put in its place must not block the start: only a small regular file is read.
    return parseHolder(readRegularFileSync(path, 64 * 1024).toString('utf8'));
  } catch {
    return undefined; // gone or unreadable: judged by its heartbeat
  }
}

/** The lock's stat; undefined if it is missing, or its directory is (ENOTDIR: replaced by a file). */
function statIfPresent(path: string): BigIntStats | undefined {
  try {
    return statSync(path, { bigint: true, throwIfNoEntry: false });
  } catch (err) {
    if (errorCode(err) === 'ENOTDIR') return undefined;
    throw err;
  }
}

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // already closed; nothing was pending on an empty lock file
  }
}
