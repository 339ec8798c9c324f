// Persistence of the in-memory limiter's state (day buckets and bans survive a restart; see
// docs/rate-limits.md). The file is replaced atomically so that a crash mid-save leaves
// the previous snapshot.

import { mkdir, rename, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { MAX_BAN_SECONDS, MAX_LIMIT, fsyncDir, readJsonFile, writeNewFileSynced, type Logger } from '../core/index.js';

/** One id in a snapshot. Token counts and the ban are as of LimiterState.savedAt. */
export interface LimiterStateEntry {
  readonly id: string;
  /** Limits in force when saved: they give the refill rate for the downtime. */
  readonly perMinute: number;
  readonly perDay: number;
  /** Tokens (may be fractional) in each bucket. */
  readonly minute: number;
  readonly day: number;
  /** Consecutive refusals so far. */
  readonly strikes: number;
  /** Ban time left in ms, 0 when not banned. */
  readonly banMs: number;
}

/** JSON-serializable snapshot of a Limiter, anchored on wall time. */
export interface LimiterState {
  readonly version: 1;
  /** clock.now() at the snapshot (Unix ms). */
  readonly savedAt: number;
  /** Oldest (least recently used) first, so restore() rebuilds the LRU order. */
  readonly entries: readonly LimiterStateEntry[];
}

export const LIMITER_STATE_VERSION = 1;

/**
 * A limiter's exact state for a named snapshot (admin API), kept in memory only: every id's
 * buckets as they are (not refilled), how long ago they were last brought up to date, the
 * refusals counted and the ban time left. Restored, each id is exactly as it was when saved,
 * whatever time passed in between.
 *
 * Kept as one list of ids and one typed array of numbers rather than an object per id: a
 * hundred thousand small objects made while requests are served cost the young-generation
 * collector tens of ms of pause to copy, a typed array nothing.
 */
export interface LimiterSnapshot {
  /** Oldest (least recently used) first. */
  readonly ids: readonly string[];
  /** SNAPSHOT_FIELDS numbers per id, in the order of `ids` (see SnapshotField). */
  readonly numbers: Float64Array;
}

/**
 * The numbers of one id in LimiterSnapshot.numbers: its limits, its buckets in
 * token-milliseconds (the limiter's own unit), the time since they were last brought up to
 * date (ms), the refusals counted, and the ban time left (ms, 0 when not banned).
 */
export const SnapshotField = { perMinute: 0, perDay: 1, minute: 2, day: 3, ageMs: 4, strikes: 5, banLeftMs: 6 } as const;
export const SNAPSHOT_FIELDS = 7;

/**
 * The largest limiter state file read. The service writes it itself, about 170 bytes per key
 * in use: a 16 MiB config holds up to some 700,000 short keys, whose state fits in this.
 */
export const MAX_LIMITER_STATE_BYTES = 256 * 1024 * 1024;


/** What persistence needs of a limiter: its state as a snapshot. */
export interface SavesState {
  toState(): LimiterState;
}

/** Writes `state` to `file` atomically: temp file in the same directory, fsync, rename, fsync dir. */
export async function saveLimiterState(file: string, state: LimiterState): Promise<void> {
  const dir = dirname(file);
  // Same directory so rename() is atomic (same file system); random suffix so concurrent
  // savers never write into each other's temp file.
  const tmp = join(dir, `.${basename(file)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    // The directory may have been removed under a running service (the store recreates it too).
    await mkdir(dir, { recursive: true });
    await writeNewFileSynced(tmp, JSON.stringify(state) + '\n', 0o600);
    await rename(tmp, file);
  } catch (err) {
    await removeTemp(tmp);
    throw new Error(`cannot save limiter state to ${file}: ${messageOf(err)}`, { cause: err });
  }
  await syncDir(dir, file);
}

/** Reads a snapshot; undefined when the file does not exist. Errors name the file. */
export async function loadLimiterState(file: string): Promise<LimiterState | undefined> {
  const read = await readJsonFile(file, MAX_LIMITER_STATE_BYTES);
  if (read.kind === 'missing') return undefined; // first start: nothing saved yet
  if (read.kind === 'unreadable') throw new Error(`cannot read limiter state file ${file}: ${read.error.message}`, { cause: read.error });
  if (read.kind === 'invalid') throw new Error(`limiter state file ${file} is not valid JSON: ${read.error.message}`, { cause: read.error });
  const value = read.value;
  try {
    return parseLimiterState(value);
  } catch (err) {
    throw new Error(`limiter state file ${file} is malformed: ${messageOf(err)}`, { cause: err });
  }
}

/** Checks the shape of a parsed snapshot; throws naming the first offending field. */
export function parseLimiterState(value: unknown): LimiterState {
  if (!isRecord(value)) throw new Error('expected a JSON object');
  if (value['version'] !== LIMITER_STATE_VERSION) {
    throw new Error(`version: expected ${LIMITER_STATE_VERSION}, got ${JSON.stringify(value['version'])}`);
  }
  const savedAt = bounded(value['savedAt'], 0, MAX_DATE_MS, 'savedAt');
  const raw = value['entries'];
  if (!Array.isArray(raw)) throw new Error('entries: expected an array');
  const entries = raw.map((item: unknown, i) => parseEntry(item, `entries[${i}]`));
  return { version: LIMITER_STATE_VERSION, savedAt, entries };
}

/** Largest time value a Date can hold (ECMA-262 21.4.1.22). */
const MAX_DATE_MS = 8.64e15;
/** Ids are key digests (64 hex characters); anything much longer was not written by us. */
const MAX_ID_LENGTH = 256;

/**
 * The file can be edited by hand, so every number is held to what the service itself could
 * have written, with the bounds the config has (a hand-edited banMs of 1e308 would otherwise
 * become "Retry-After: 1e+305"): limits are integers 1..MAX_LIMIT, tokens lie between 0 and
 * the capacity, strikes are whole, a ban is at most MAX_BAN_SECONDS.
 */
function parseEntry(item: unknown, at: string): LimiterStateEntry {
  if (!isRecord(item)) throw new Error(`${at}: expected an object`);
  const id = item['id'];
  if (typeof id !== 'string' || id === '' || id.length > MAX_ID_LENGTH) {
    throw new Error(`${at}.id: expected a non-empty string of at most ${MAX_ID_LENGTH} characters`);
  }
  const perMinute = integer(item['perMinute'], 1, MAX_LIMIT, `${at}.perMinute`);
  const perDay = integer(item['perDay'], 1, MAX_LIMIT, `${at}.perDay`);
  return {
    id,
    perMinute,
    perDay,
    minute: bounded(item['minute'], 0, perMinute, `${at}.minute`),
    day: bounded(item['day'], 0, perDay, `${at}.day`),
    strikes: integer(item['strikes'], 0, Number.MAX_SAFE_INTEGER, `${at}.strikes`),
    banMs: bounded(item['banMs'], 0, MAX_BAN_SECONDS * 1000, `${at}.banMs`),
  };
}

export interface LimiterPersistenceOptions {
  /** How often to save, in ms. */
  intervalMs: number;
  logger: Logger;
}

export interface LimiterPersistence {
  /** Saves now (after any save in flight); rejects if the save fails. */
  flush(): Promise<void>;
  /** Stops the timer and saves once more; rejects if that last save fails. */
  stop(): Promise<void>;
}

/**
 * Saves the limiter every intervalMs. The timer is unref'd so it never keeps the process
 * alive; a failed periodic save is logged as a warning and retried at the next tick.
 */
export function startLimiterPersistence(
  limiter: SavesState,
  file: string,
  opts: LimiterPersistenceOptions,
): LimiterPersistence {
  // Saves are chained so two never race on the rename and the last one written is the newest.
  let chain: Promise<void> = Promise.resolve();
  let inFlight = false;
  let stopped = false;

  const save = (): Promise<void> => {
    const next = chain.then(async () => {
      inFlight = true;
      try {
        await saveLimiterState(file, limiter.toState());
      } finally {
        inFlight = false;
      }
    });
    // Keep the chain alive after a failure; the caller of save() still sees the rejection.
    chain = next.catch(() => undefined);
    return next;
  };

  const tick = (): void => {
    if (inFlight) return; // a slow disk must not pile up saves
    save().catch((err: unknown) => {
      opts.logger.log('warn', 'limiter state save failed', { file, error: messageOf(err) });
    });
  };

  const timer = setInterval(tick, opts.intervalMs);
  timer.unref();

  return {
    flush: save,
    async stop(): Promise<void> {
      if (stopped) return chain;
      stopped = true;
      clearInterval(timer);
      return save();
    },
  };
}

/** fsync the directory so the rename itself survives a power cut. */
async function syncDir(dir: string, file: string): Promise<void> {
  try {
    await fsyncDir(dir);
  } catch (err) {
    // Windows cannot open or fsync a directory; there the rename is as durable as it gets.
    if (process.platform === 'win32' && (isErrno(err, 'EISDIR') || isErrno(err, 'EPERM'))) return;
    throw new Error(`cannot sync directory of ${file}: ${messageOf(err)}`, { cause: err });
  }
}

async function removeTemp(tmp: string): Promise<void> {
  try {
    await unlink(tmp);
  } catch (err) {
    // ENOENT: the temp file was never created or was already renamed; ENOTDIR: a part of
    // its path is a file, so it cannot exist either. Anything else is reported with the
    // original failure's message by the caller, so rethrow nothing here but keep it visible
    // in the process warnings.
    if (!isErrno(err, 'ENOENT') && !isErrno(err, 'ENOTDIR')) process.emitWarning(`cannot remove ${tmp}: ${messageOf(err)}`);
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function finite(v: unknown, at: string): number {
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new Error(`${at}: expected a finite number`);
  return v;
}

/** A finite number from min to max. */
function bounded(v: unknown, min: number, max: number, at: string): number {
  const n = finite(v, at);
  if (n < min || n > max) throw new Error(`${at}: expected a number from ${min} to ${max}, got ${n}`);
  return n;
}

/** An integer from min to max. */
function integer(v: unknown, min: number, max: number, at: string): number {
  const n = bounded(v, min, max, at);
  if (!Number.isInteger(n)) throw new Error(`${at}: expected an integer, got ${n}`);
  return n;
}

function isErrno(err: unknown, code: string): boolean {
  return err instanceof Error && (err as NodeJS.ErrnoException).code === code;
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
