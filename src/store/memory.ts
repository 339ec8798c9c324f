// The in-memory store (tests, `--memory`): the index alone, each write applied at once and
// nothing written to disk. The durable store is in file/.
import { applyBatch, planBatch } from './batch.js';
import type { Op } from './batch.js';
import type { LocalPetStore } from './contract.js';
import { StoreUnavailableError } from './errors.js';
import { KeyTable } from './idempotency.js';
import { IndexedStore } from './indexed.js';
import { PetIndex } from './pet-index.js';
import { DEFAULT_IDEMPOTENCY_RETENTION_HOURS, systemClock, type Clock } from '../core/index.js';

export interface MemoryStoreOptions {
  /** Wall time for idempotency keys; default the system clock. */
  clock?: Clock;
  /** How long an idempotency key is remembered, in ms; default 24 hours. */
  idempotencyRetentionMs?: number;
}

/** A store that keeps everything in memory and writes nothing to disk. */
class MemoryStore extends IndexedStore {
  #closed = false;

  constructor(opts: MemoryStoreOptions) {
    super(
      new PetIndex(),
      new KeyTable(opts.idempotencyRetentionMs ?? DEFAULT_IDEMPOTENCY_RETENTION_HOURS * 3_600_000),
      opts.clock ?? systemClock,
    );
  }

  close(): Promise<void> {
    this.#closed = true;
    return Promise.resolve();
  }

  protected run(op: Op): void {
    if (this.#closed) {
      op.reject(new StoreUnavailableError('the store is closed'));
      return;
    }
    applyBatch(planBatch([op], this.index.nextId, false), this.index, this.keys);
  }
}

export function openMemoryStore(opts: MemoryStoreOptions = {}): LocalPetStore {
  return new MemoryStore(opts);
}
