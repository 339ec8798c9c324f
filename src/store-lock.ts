// One writer per data file: `<file>.lock` holds the pid of the process that owns the file.
// The lock file appears atomically with its content (written aside, then hard-linked into
// place, which fails if the name exists), so a reader never sees an empty lock.
import { resolve } from 'node:path';
import { randomUUID } from 'node:crypto';
import { link, open, readFile, rename, unlink } from 'node:fs/promises';
import { errorCode, describeError } from './store-errors.js';
import type { Logger } from './types.js';

/** Why the lock could not be taken: held by a live process, or an I/O error. */
export class LockHeldError extends Error {
  constructor(readonly pid: number) {
    super(`locked by process ${pid}`);
  }
}

/**
 * Lock files held by this process. The one piece of module state in the service, on
 * purpose: a lock is a property of the process, and it is how two embedded instances in one
 * process are kept off the same data file, while a stale file with our own pid is not.
 */
const heldHere = new Set<string>();

/** True if a process with this pid exists (EPERM: it exists but belongs to someone else). */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    if (errorCode(err) === 'EPERM') return true;
    if (errorCode(err) === 'ESRCH') return false;
    throw err;
  }
}

/** The pid written in a lock file, or undefined if the content is not a pid. */
function parsePid(text: string): number | undefined {
  const trimmed = text.trim();
  if (!/^[1-9][0-9]{0,9}$/.test(trimmed)) return undefined;
  return Number(trimmed);
}

async function readLockPid(lockPath: string): Promise<number | undefined | 'missing'> {
  try {
    return parsePid(await readFile(lockPath, 'utf8'));
  } catch (err) {
    if (errorCode(err) === 'ENOENT') return 'missing';
    throw err;
  }
}

/** Creates the lock file with our pid; false if the name is already taken. */
async function tryCreate(lockPath: string): Promise<boolean> {
  // Unique even between two stores of one process opening the same file at once.
  const aside = `${lockPath}.${process.pid}.${randomUUID()}.tmp`;
  // Synced before it is linked into place: a disk failing soon after must not leave an empty
  // lock that no later start can read.
  const handle = await open(aside, 'w');
  try {
    await handle.writeFile(`${process.pid}\n`);
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await link(aside, lockPath);
    return true;
  } catch (err) {
    if (errorCode(err) === 'EEXIST') return false;
    throw err;
  } finally {
    await unlink(aside);
  }
}

/**
 * Removes a lock left by a dead process. The lock is first renamed aside, and put back if
 * what we moved is not the stale lock we examined (another process may have replaced it
 * between our read and our rename).
 */
async function removeStale(lockPath: string, stalePid: number | undefined): Promise<void> {
  const aside = `${lockPath}.stale-${process.pid}`;
  try {
    await rename(lockPath, aside);
  } catch (err) {
    if (errorCode(err) === 'ENOENT') return; // someone else removed it first
    throw err;
  }
  const moved = parsePid(await readFile(aside, 'utf8'));
  if (moved !== stalePid) {
    await link(aside, lockPath).catch((err: unknown) => {
      if (errorCode(err) !== 'EEXIST') throw err;
    });
  }
  await unlink(aside);
}

/**
 * Takes the lock for this process. Throws LockHeldError if a live process holds it; takes
 * over, with a warning, a lock whose process is gone (killed, or a crash).
 */
export async function acquireLock(lockPath: string, logger: Logger): Promise<void> {
  const key = resolve(lockPath);
  if (heldHere.has(key)) throw new LockHeldError(process.pid);
  for (let attempt = 0; attempt < 5; attempt++) {
    if (await tryCreate(lockPath)) {
      heldHere.add(key);
      return;
    }
    const pid = await readLockPid(lockPath);
    if (pid === 'missing') continue;
    // Our own pid in a lock this process does not hold is a previous incarnation's: in a
    // container node is often pid 1 on every start, and pid 1 is always "alive".
    if (pid !== undefined && pid !== process.pid && isProcessAlive(pid)) throw new LockHeldError(pid);
    logger.log('warn', 'taking over a stale data file lock', {
      lock: lockPath,
      stalePid: pid ?? 'unreadable',
    });
    await removeStale(lockPath, pid);
  }
  throw new Error(`could not take the lock ${lockPath}: it keeps changing`);
}

/** Makes sure we still hold the lock (it may have vanished with a removed directory). */
export async function reassertLock(lockPath: string, logger: Logger): Promise<void> {
  const pid = await readLockPid(lockPath);
  if (pid === process.pid) return;
  if (pid === undefined) {
    // Unreadable (e.g. left empty by a failing disk): nobody can hold it; put ours back.
    await removeStale(lockPath, pid);
  }
  if ((pid === 'missing' || pid === undefined) && (await tryCreate(lockPath))) {
    logger.log('warn', 'data file lock was missing or unreadable and has been recreated', { lock: lockPath });
    return;
  }
  throw new Error(`the lock ${lockPath} is no longer held by this process`);
}

/** Removes the lock if it is still ours; a problem is logged, not thrown (we are closing). */
export async function releaseLock(lockPath: string, logger: Logger): Promise<void> {
  heldHere.delete(resolve(lockPath));
  try {
    if ((await readLockPid(lockPath)) === process.pid) await unlink(lockPath);
    else logger.log('warn', 'data file lock is no longer ours; leaving it', { lock: lockPath });
  } catch (err) {
    logger.log('warn', 'could not remove the data file lock', { lock: lockPath, error: describeError(err) });
  }
}
