// The durable store: a snapshot file plus an append-only journal, one writer per data file.
// This file is the writer (the queue, group commit, failures, restores); the files and their
// upkeep (compaction, rebuild) are data-files.ts.
//
// Durability, point by point:
// - A create resolves only after its journal line is durably written (O_DSYNC, or write +
//   fdatasync; see journal.ts); only then is the pet visible (applyBatch runs after).
// - Group commit: one batch in flight at a time; creates arriving meanwhile queue and share
//   the next single durable write.
// - The snapshot is only ever replaced atomically (snapshot.ts); a snapshot or journal
//   that cannot be parsed refuses the start and is not touched.
// - Compaction rotates the journal to `.journal.old` between batches, writes a snapshot of
//   what that covers, then unlinks `.old`. Replay reads snapshot, `.old`, journal; records
//   below the running nextId must be exactly the pets already there and are skipped, so
//   every crash point replays to the acknowledged state (journal.ts checks the rest).
// - A failed write rejects its whole batch (503) and changes nothing in memory. The ids it
//   would have used are given out again: the journal is cut back to its last durable length
//   first, or, if that fails too, rebuilt from memory (snapshot + empty journal) before the
//   next write, so no two durable records ever share an id.
import { applyBatch, failBatch, planBatch } from '../batch.js';
import { IndexedStore } from '../indexed.js';
import type { Op } from '../batch.js';
import type { DiskOp, StorePaths } from './disk.js';
import { StoreBusyError, StoreUnavailableError } from '../errors.js';
import type { KeyCursor, KeyTable } from '../idempotency.js';
import type { LocalSnapshot, PreparedRestore } from '../snapshot-copy.js';
import type { IndexView, PetIndex } from '../pet-index.js';
import { DataFiles, type StoreObserver } from './data-files.js';
import type { JournalWriter } from './journal.js';
import type { DataLock } from './lock.js';
import { DEFAULT_MAX_QUEUED_WRITES, describeError, type Clock, type Logger } from '../../core/index.js';

export interface FileStoreOptions {
  logger: Logger;
  /** Test hook: called after each durable batch with the number of operations it carried. */
  onFlush?: (batchSize: number) => void;
  /** Compact only once the journal exceeds this many bytes (and the snapshot); default 1 MiB. */
  compactMinBytes?: number;
  /** Test hook: called before disk operations; throwing simulates a disk error there. */
  beforeIo?: (op: DiskOp) => void;
  /** A lock not refreshed for this long is taken over by the next start; see lock.ts. */
  lockStaleMs?: number;
  /**
   * Writes that may wait for the batch in flight; past it a write is refused at once
   * (StoreBusyError, a 503), so a disk slower than the clients cannot grow memory without
   * bound. Default DEFAULT_MAX_QUEUED_WRITES.
   */
  maxQueuedWrites?: number;
  /** Wall time for idempotency keys; default the system clock. */
  clock?: Clock;
  /**
   * How long an idempotency key is remembered, in ms (default 24 hours). A compaction keeps
   * the keys younger than this with their pets, and drops the others.
   */
  idempotencyRetentionMs?: number;
  /** Figures for metrics (optional; each call is cheap and must not throw). */
  observer?: StoreObserver;
}

/** A snapshot restore waiting for the writer: it runs between batches, alone. */
interface RestoreTask {
  readonly kind: 'restore';
  readonly snapshot: LocalSnapshot;
  /** The restored state, built aside before the task was queued. */
  readonly prepared: PreparedRestore;
  readonly apply: () => void;
  resolve(): void;
  reject(err: Error): void;
}

/** The running file store; opened by openFileStore (open.ts). */
export class FileStore extends IndexedStore {
  readonly #files: DataFiles;
  readonly #logger: Logger;
  readonly #onFlush: ((batchSize: number) => void) | undefined;
  readonly #maxQueued: number;
  readonly #observer: StoreObserver | undefined;
  readonly #queue: Array<Op | RestoreTask> = [];
  /** Restores in the queue: while 0, the writer takes the whole queue as one batch. */
  #restoresQueued = 0;
  #draining = false;
  #drained: Promise<void> = Promise.resolve();
  #closing: Promise<void> | null = null;

  constructor(
    paths: StorePaths,
    opts: FileStoreOptions,
    index: PetIndex,
    keys: KeyTable,
    clock: Clock,
    journal: JournalWriter,
    sizes: { snapshotBytes: number; oldJournalBytes: number | undefined },
    lock: DataLock,
  ) {
    super(index, keys, clock);
    this.#logger = opts.logger;
    this.#onFlush = opts.onFlush;
    this.#maxQueued = opts.maxQueuedWrites ?? DEFAULT_MAX_QUEUED_WRITES;
    this.#observer = opts.observer;
    this.#files = new DataFiles(paths, journal, sizes, lock, {
      logger: opts.logger,
      beforeIo: opts.beforeIo,
      compactMinBytes: opts.compactMinBytes,
      observer: opts.observer,
      view: () => this.#view(),
      compacted: () => {
        if (this.#closing === null) this.#wake();
      },
    });
    this.#files.reportJournal();
    // A long journal (or a leftover `.old`) found at start is compacted now, not at the first
    // write, so that the next start is fast even if this run writes nothing.
    this.#wake();
  }

  close(): Promise<void> {
    this.#closing ??= this.#shutdown();
    return this.#closing;
  }

  protected run(op: Op): void {
    if (this.#closing !== null) {
      op.reject(new StoreUnavailableError('the store is closed'));
      return;
    }
    if (this.#queue.length >= this.#maxQueued) {
      op.reject(new StoreBusyError(`${this.#queue.length} writes are already waiting for the disk`));
      return;
    }
    this.#queue.push(op);
    this.#wake();
  }

  /**
   * A restore, made durable by the writer between batches: every write queued before it is
   * written first, every write queued after it goes on top of the restored state.
   */
  protected override commitRestore(snapshot: LocalSnapshot, prepared: PreparedRestore, apply: () => void): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.#closing !== null) {
        reject(new StoreUnavailableError('the store is closed'));
        return;
      }
      this.#queue.push({ kind: 'restore', snapshot, prepared, apply, resolve, reject });
      this.#restoresQueued++;
      this.#wake();
    });
  }

  /** Starts the writer unless it is running. */
  #wake(): void {
    if (this.#draining) return;
    this.#draining = true;
    // Start on the next macrotask, so that every create arriving in the same turn of the
    // event loop (e.g. several requests read in one poll) shares the first write.
    this.#drained = new Promise<void>((done) => setImmediate(done)).then(() => this.#drain());
  }

  /**
   * The single writer: one batch at a time until the queue is empty, and the journal
   * rotation of a compaction in between (never while a batch is in flight). Never rejects.
   */
  async #drain(): Promise<void> {
    // The batch being written, so that an unexpected throw can still settle it.
    let ops: Op[] = [];
    try {
      do {
        if (this.#queue[0]?.kind === 'restore') {
          const task = this.#queue.shift() as RestoreTask;
          this.#restoresQueued--;
          await this.#restore(task);
          continue;
        }
        const cut = this.#restoresQueued === 0 ? -1 : this.#queue.findIndex((o) => o.kind === 'restore');
        ops = this.#queue.splice(0, cut < 0 ? this.#queue.length : cut) as Op[];
        if (ops.length > 0 && (!this.#files.needsRebuild || (await this.#tryRebuild(ops)))) await this.#commit(ops);
        ops = [];
        await this.#files.maybeStartCompaction();
      } while (this.#queue.length > 0);
    } catch (err) {
      this.#writerFailed(err, ops);
    } finally {
      // Same synchronous turn as the last queue check: an op queued after this starts a new drain.
      this.#draining = false;
    }
  }

  /**
   * Only a bug gets here (e.g. a seed whose fields throw when read). Every operation taken
   * is settled, none left waiting: the batch in flight and the queue are rejected (a promise
   * already resolved stays resolved). What the journal may hold of that batch is not known,
   * so it is rewritten from memory before the next write: nothing of the batch is stored.
   */
  #writerFailed(err: unknown, inFlight: Op[]): void {
    this.#logger.log('error', 'store writer failed unexpectedly', { error: describeError(err) });
    const failure = new StoreUnavailableError(`internal store error: ${describeError(err)}`);
    for (const op of inFlight) op.reject(failure);
    for (const op of this.#queue.splice(0)) op.reject(failure);
    this.#restoresQueued = 0;
    this.#files.needsRebuild = true;
    const journal = this.#files.journal;
    this.#files.journal = null;
    void this.#files.closeQuietly(journal);
  }

  /** Writes one batch and makes it visible, or rejects all of it. */
  async #commit(ops: Op[]): Promise<void> {
    if (this.#lockLost(ops)) return;
    const batch = planBatch(ops, this.index.nextId, true);
    if (batch.text === '') {
      // Nothing to write: an empty seed, or every op was rejected while planning.
      applyBatch(batch, this.index, this.keys);
      return;
    }
    const journal = this.#files.journal;
    if (journal === null) {
      // Not reached: a missing journal always comes with #needsRebuild, handled before.
      this.#files.needsRebuild = true;
      failBatch(batch, new StoreUnavailableError(`data file ${this.#files.paths.given} has no open journal`));
      return;
    }
    const started = this.#observer === undefined ? 0 : performance.now();
    try {
      await journal.append(Buffer.from(batch.text), this.#files.beforeIo);
    } catch (err) {
      this.#logger.log('error', 'journal write failed; batch rejected', {
        file: this.#files.paths.given,
        batchSize: batch.steps.length,
        error: describeError(err),
      });
      failBatch(batch, this.#files.unavailable(err));
      await this.#cutBack(journal);
      return;
    }
    applyBatch(batch, this.index, this.keys);
    if (batch.steps.some((step) => step.op.kind === 'reset')) this.#files.resetSinceSnapshot = true;
    this.#onFlush?.(batch.steps.length);
    if (this.#observer !== undefined) {
      this.#observer.batchWritten(batch.steps.length, (performance.now() - started) / 1000);
      this.#files.reportJournal();
    }
  }

  /** After a failed append: keep the journal if it can be cut back, else rebuild before the next write. */
  async #cutBack(journal: JournalWriter): Promise<void> {
    try {
      await journal.truncateToDurable();
      return;
    } catch (err) {
      this.#logger.log('error', 'cannot restore the journal; it will be rewritten before the next write', {
        file: this.#files.paths.given,
        error: describeError(err),
      });
    }
    this.#files.needsRebuild = true;
    this.#files.journal = null;
    await this.#files.closeQuietly(journal);
  }

  /**
   * Rewrites the store from memory: snapshot of everything, then an empty journal. Used when
   * the journal can no longer be trusted or its directory vanished. False (ops rejected) if
   * the disk still fails.
   */
  async #tryRebuild(ops: Op[]): Promise<boolean> {
    try {
      await this.#files.rebuild();
      return true;
    } catch (err) {
      this.#logger.log('error', 'cannot rewrite the data file; rejecting writes', {
        file: this.#files.paths.given,
        error: describeError(err),
      });
      const failure = this.#files.unavailable(err);
      for (const op of ops) op.reject(failure);
      return false;
    }
  }

  /**
   * A snapshot restore, durably: first everything acknowledged goes into the snapshot and the
   * journals are emptied (skipped when they already are), so that the snapshot alone is the
   * state; then the restored state replaces it in one atomic rename. A crash before the rename
   * leaves the state as it was (the restore was not answered); after it, the restored state.
   * Only then is it swapped in memory and the restore answered.
   */
  async #restore(task: RestoreTask): Promise<void> {
    let emptied = false;
    try {
      const problem = this.#files.lock.problem();
      if (problem !== undefined) throw new StoreUnavailableError(`data file ${this.#files.paths.given} cannot be written: ${problem}`);
      await this.#files.compaction;
      if (!this.#files.onlySnapshot) await this.#files.rebuild(false);
      emptied = true;
      const s = task.snapshot;
      const view: IndexView = { pets: s.state.pets, count: s.state.count, nextId: s.nextId };
      const { keys, now } = task.prepared;
      await this.#files.writeWhole(view, this.keys.cursorOf(keys, now));
    } catch (err) {
      this.#logger.log('error', 'snapshot restore failed; nothing was restored', { file: this.#files.paths.given, error: describeError(err) });
      // Past the emptying, the rename may or may not have happened: the next write rewrites
      // the data file from memory (the state before the restore) first.
      if (emptied) this.#files.needsRebuild = true;
      task.reject(err instanceof StoreUnavailableError ? err : this.#files.unavailable(err));
      return;
    }
    task.apply();
    this.#files.reportJournal();
    this.#logger.log('info', 'snapshot restored', { file: this.#files.paths.given, pets: task.snapshot.pets });
    task.resolve();
  }

  /**
   * The pets as they are now, and their keys younger than the retention (older ones are
   * swept from memory here too, and left out of the snapshot).
   */
  #view(): [IndexView, KeyCursor] {
    const now = this.clock.now();
    this.keys.sweep(now);
    return [this.index.view(), this.keys.cursor(now)];
  }

  async #shutdown(): Promise<void> {
    await this.#drained;
    await this.#files.compaction;
    let failure: Error | undefined;
    // A directory deleted since the last write is noticed only here: the journal, unlinked
    // with it, would take every acknowledged pet along when closed.
    if (!this.#files.needsRebuild && this.#files.journal && !stillLinked(this.#files.journal)) {
      this.#files.needsRebuild = true;
    }
    if (this.#files.needsRebuild) {
      // The last write failed in a way that may have lost the files (directory removed):
      // one more attempt to leave every acknowledged pet on disk.
      await this.#files.rebuild().catch((err: unknown) => {
        failure = this.#files.unavailable(err);
        this.#logger.log('error', 'closing with acknowledged pets not on disk', { file: this.#files.paths.given, error: describeError(err) });
      });
    }
    await this.#files.closeQuietly(this.#files.journal);
    this.#files.journal = null;
    this.#files.lock.release();
    if (failure !== undefined) throw failure;
  }

  /** Before each batch: a lock that is no longer ours (lock.ts) refuses the batch. */
  #lockLost(ops: Op[]): boolean {
    const problem = this.#files.lock.problem();
    if (problem === undefined) return false;
    const failure = new StoreUnavailableError(`data file ${this.#files.paths.given} cannot be written: ${problem}`);
    for (const op of ops) op.reject(failure);
    return true;
  }
}

/** Whether the journal still has its name; one that cannot even be checked counts as gone. */
function stillLinked(journal: JournalWriter): boolean {
  try {
    return journal.isLinked();
  } catch {
    return false;
  }
}
