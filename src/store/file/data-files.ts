// The files behind the file store (file-store.ts): the journal being appended to, the snapshot,
// and their upkeep. Compaction rotates the journal to `.journal.old` between batches, writes a
// snapshot of what that covers beside new batches, then unlinks `.old`; a rebuild rewrites
// everything from memory (snapshot + empty journal) when the journal can no longer be trusted.
// Every snapshot is renamed into place only while the lock is still ours.
import { rename } from 'node:fs/promises';
import { fsyncDir, makeDir, unlinkIfPresent } from './disk.js';
import type { IoHook, StorePaths } from './disk.js';
import { StoreUnavailableError } from '../errors.js';
import type { KeyCursor } from '../idempotency.js';
import type { IndexView } from '../pet-index.js';
import { JournalWriter } from './journal.js';
import type { DataLock } from './lock.js';
import { writeSnapshot } from './snapshot.js';
import { describeError, errorCode, type Logger } from '../../core/index.js';

const DEFAULT_COMPACT_MIN_BYTES = 1024 * 1024;

/** What the file store reports as it writes: for metrics, never needed to run. */
export interface StoreObserver {
  /** A batch of `size` operations was made durable; the append and sync took `seconds`. */
  batchWritten(size: number, seconds: number): void;
  /** Bytes of the journal (and its rotated part) that the next snapshot will absorb. */
  journalBytes(bytes: number): void;
  /** A compaction ended, written or failed. */
  compacted(ok: boolean): void;
}

export interface DataFilesOptions {
  readonly logger: Logger;
  readonly beforeIo: IoHook;
  readonly compactMinBytes: number | undefined;
  readonly observer: StoreObserver | undefined;
  /** The pets and live keys as they are now (keys past their retention swept first). */
  readonly view: () => [IndexView, KeyCursor];
  /** After a compaction: writes during it may have made another one due. */
  readonly compacted: () => void;
}

export class DataFiles {
  readonly paths: StorePaths;
  readonly lock: DataLock;
  readonly #logger: Logger;
  readonly beforeIo: IoHook;
  readonly #compactMinBytes: number;
  readonly #observer: StoreObserver | undefined;
  readonly #view: () => [IndexView, KeyCursor];
  readonly #compacted: () => void;
  /** The active journal; null only while a rebuild is pending after a failure. */
  journal: JournalWriter | null;
  /** Set when the journal can no longer be trusted: rewrite everything before the next batch. */
  needsRebuild = false;
  /** A reset was made durable since the last snapshot: the snapshot is all dead weight now. */
  resetSinceSnapshot = false;
  /** The compaction under way, if any. */
  compaction: Promise<void> | null = null;
  #snapshotBytes: number;
  /** Size of `.journal.old`, or undefined if there is none. */
  #oldJournalBytes: number | undefined;
  /** After a failed compaction, wait until the journal reaches this size before retrying. */
  #compactRetryAt = 0;
  /** Throws unless the data file is still ours to write: checked before a snapshot's rename. */
  readonly #stillOurs = (): void => this.lock.reassert();

  constructor(paths: StorePaths, journal: JournalWriter, sizes: { snapshotBytes: number; oldJournalBytes: number | undefined }, lock: DataLock, opts: DataFilesOptions) {
    this.paths = paths;
    this.lock = lock;
    this.journal = journal;
    this.#snapshotBytes = sizes.snapshotBytes;
    this.#oldJournalBytes = sizes.oldJournalBytes;
    this.#logger = opts.logger;
    this.beforeIo = opts.beforeIo;
    this.#compactMinBytes = opts.compactMinBytes ?? DEFAULT_COMPACT_MIN_BYTES;
    this.#observer = opts.observer;
    this.#view = opts.view;
    this.#compacted = opts.compacted;
  }

  /** True when the snapshot alone is the state: no journal to replay, nothing to rebuild. */
  get onlySnapshot(): boolean {
    return !this.needsRebuild && this.#oldJournalBytes === undefined && this.journal !== null && this.journal.length === 0;
  }

  reportJournal(): void {
    this.#observer?.journalBytes((this.journal?.length ?? 0) + (this.#oldJournalBytes ?? 0));
  }

  /** Writes `view` as the snapshot, the whole state (the journals must be empty). */
  async writeWhole(view: IndexView, keys: KeyCursor): Promise<void> {
    this.#snapshotBytes = await writeSnapshot(this.paths, view, keys, this.beforeIo, this.#logger, this.#stillOurs);
    this.resetSinceSnapshot = false;
  }

  /**
   * Rewrites the files from memory: a snapshot of everything, then an empty journal.
   */
  async rebuild(afterError = true): Promise<void> {
    await this.compaction;
    await makeDir(this.paths.dir);
    this.lock.reassert();
    // The snapshot covers everything acknowledged, so only after its rename may the old
    // journals go: a crash in between replays them over it and skips what it already holds.
    const [view, keys] = this.#view();
    this.#snapshotBytes = await writeSnapshot(this.paths, view, keys, this.beforeIo, this.#logger, this.#stillOurs);
    await unlinkIfPresent(this.paths.oldJournal);
    this.#oldJournalBytes = undefined;
    // A journal still open here lost its name (its directory was removed): close it, or its
    // descriptor would outlive the store.
    const unlinked = this.journal;
    this.journal = null;
    await this.closeQuietly(unlinked);
    this.journal = await JournalWriter.create(this.paths.journal, false);
    await fsyncDir(this.paths.dir);
    this.needsRebuild = false;
    if (afterError) this.#logger.log('warn', 'data file rewritten after a disk error', { file: this.paths.given, pets: view.count });
  }

  /** Between batches: rotate the journal and snapshot in the background if it has grown. */
  async maybeStartCompaction(): Promise<void> {
    const journal = this.journal;
    if (journal === null || this.compaction !== null || this.needsRebuild || this.lock.lost) return;
    const total = journal.length + (this.#oldJournalBytes ?? 0);
    // Replaying the journal costs about what parsing the snapshot does, so compact once it is
    // the larger part, or once a reset has made a large snapshot pointless to parse at start.
    const due =
      total > Math.max(this.#snapshotBytes, this.#compactMinBytes) ||
      (this.resetSinceSnapshot && this.#snapshotBytes + total > this.#compactMinBytes);
    if (!due || total < this.#compactRetryAt) return;
    const [view, keys] = this.#view();
    // With a `.old` left by a failed compaction, skip the rotation: the new snapshot covers
    // `.old` too, and the active journal may overlap the snapshot (replay skips overlaps).
    if (this.#oldJournalBytes === undefined && !(await this.#rotate(journal, total))) return;
    this.resetSinceSnapshot = false;
    this.compaction = this.#compact(view, keys, total).finally(() => {
      this.compaction = null;
      // Writes during the compaction (a reset, a large seed) may have made another one due.
      this.#compacted();
    });
  }

  /** Renames the journal to `.old` and opens a fresh one. False if the compaction is off. */
  async #rotate(journal: JournalWriter, total: number): Promise<boolean> {
    try {
      this.beforeIo?.('rotate');
      await rename(this.paths.journal, this.paths.oldJournal);
    } catch (err) {
      this.#compactionFailed(err, total);
      return false;
    }
    // From here the active journal's name is gone; the store needs a fresh one to go on.
    this.#oldJournalBytes = journal.length;
    try {
      const fresh = await JournalWriter.create(this.paths.journal, true);
      this.journal = fresh;
      await fsyncDir(this.paths.dir); // the rename and the new name, before any ack from it
    } catch (err) {
      this.#logger.log('error', 'journal rotation failed; the data file will be rewritten', { error: describeError(err) });
      this.needsRebuild = true;
      if (this.journal !== journal) await this.closeQuietly(this.journal);
      this.journal = null;
      await this.closeQuietly(journal);
      return false;
    }
    await this.closeQuietly(journal);
    return true;
  }

  /** Writes the snapshot of `view` (runs beside new batches), then drops `.old`. */
  async #compact(view: IndexView, keys: KeyCursor, total: number): Promise<void> {
    try {
      this.#snapshotBytes = await writeSnapshot(this.paths, view, keys, this.beforeIo, this.#logger, this.#stillOurs);
      await unlinkIfPresent(this.paths.oldJournal);
      this.#oldJournalBytes = undefined;
      this.#compactRetryAt = 0;
      this.#observer?.compacted(true);
      this.reportJournal();
      this.#logger.log('info', 'data file compacted', { file: this.paths.given, pets: view.count, bytes: this.#snapshotBytes });
    } catch (err) {
      this.#compactionFailed(err, total);
    }
  }

  #compactionFailed(err: unknown, total: number): void {
    this.#compactRetryAt = total + this.#compactMinBytes;
    this.#observer?.compacted(false);
    this.#logger.log('warn', 'compaction failed; will retry later', { file: this.paths.given, error: describeError(err) });
  }

  /** Closes a journal no longer used; a failure is logged (nothing is pending in it). */
  async closeQuietly(journal: JournalWriter | null): Promise<void> {
    try {
      await journal?.close();
    } catch (err) {
      // Every byte it held is already synced (or its batch was rejected); nothing to recover.
      this.#logger.log('warn', 'closing the journal failed', { file: this.paths.given, error: describeError(err) });
    }
  }

  /** The 503 for a write this data file could not take. */
  unavailable(err: unknown): StoreUnavailableError {
    const code = errorCode(err);
    return new StoreUnavailableError(
      `data file ${this.paths.given} cannot be written${code === undefined ? '' : ` (${code})`}: ${describeError(err)}`,
      { cause: err },
    );
  }
}
