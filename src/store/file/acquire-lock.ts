// Taking the data file's lock at a start (see lock.ts for how it works as a whole): at once
// when it is free, at once from a dead holder, after watching the heartbeat for up to the stale
// time when only that can tell, one takeover at a time; then what earlier runs left beside it
// is removed.
import { linkSync, openSync, readdirSync, realpathSync, renameSync, statSync, unlinkSync, writeSync, constants } from 'node:fs';
import type { BigIntStats } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { basename, dirname, join } from 'node:path';
import { describeHolder, formatHolder, judgeLock, thisProcess } from './lock-holder.js';
import type { Holder } from './lock-holder.js';
import { closeQuietly, createLockFile, examine, isProcessAlive, sameFile, statIfPresent, type Identity } from './lock-file.js';
import { DEFAULT_LOCK_STALE_MS, DataLock, LockHeldError, heldHere, type LockOptions } from './lock.js';
import { describeError, errorCode, systemClock, type Logger } from '../../core/index.js';

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
