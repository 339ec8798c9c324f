// The pet store: where pets live between requests. Two implementations of one interface:
// in memory (tests, `--memory`), and on disk (snapshot + journal, see store-file.ts).
import { applyBatch, planBatch } from './store-batch.js';
import type { Op } from './store-batch.js';
import { IndexedStore } from './store-base.js';
import { StoreUnavailableError } from './store-errors.js';
import { PetIndex } from './store-index.js';
import type { NewPet, Pet, PetStatus } from './types.js';

export { StoreBusyError, StoreInputError, StoreOpenError, StoreUnavailableError } from './store-errors.js';
export { openFileStore } from './store-open.js';
export type { FileStoreOptions } from './store-file.js';
export type { DiskOp } from './store-disk.js';

/** A pet and its JSON text (keys in the order id, name, categoryId, status). */
export interface StoredPet {
  readonly pet: Readonly<Pet>;
  readonly json: string;
}

export interface ListQuery {
  status?: PetStatus;
  limit: number;
  afterId?: number;
}

export interface PetStore {
  /** Number of pets. */
  readonly count: number;
  /**
   * Changes when pets already stored may change (a reset); not on appends. Pets are
   * immutable and ids ascend, so a page followed by more pets stays the same within one
   * generation: readers may cache it.
   */
  readonly generation: number;
  get(id: number): StoredPet | undefined;
  /** Ascending id, ids > afterId, with the status if given, at most limit; O(limit + log n). */
  list(q: ListQuery): StoredPet[];
  /** Assigns the next id; resolves once the pet is durable, and only then is it visible. */
  create(input: NewPet): Promise<StoredPet>;
  /** Bulk preload in one durable write; explicit ids must exceed every existing id, ascending. */
  seed(pets: ReadonlyArray<NewPet & { id?: number }>): Promise<StoredPet[]>;
  /** Empties the store; ids restart at 1. */
  reset(): Promise<void>;
  /**
   * Waits for pending writes, leaves everything durable, releases the data file. Idempotent.
   * Rejects (StoreUnavailableError) only if the data files vanished after a disk error and
   * could not be rewritten, so acknowledged pets are not on disk.
   */
  close(): Promise<void>;
}

/** A store that keeps everything in memory and writes nothing to disk. */
class MemoryStore extends IndexedStore {
  #closed = false;

  constructor() {
    super(new PetIndex());
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
    applyBatch(planBatch([op], this.index.nextId, false), this.index);
  }
}

export function openMemoryStore(): PetStore {
  return new MemoryStore();
}
