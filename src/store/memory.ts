// The in-memory store (tests, `--memory`): the index alone, each write applied at once and
// nothing written to disk. The durable store is in file/.
import { applyBatch, planBatch } from './batch.js';
import type { Op } from './batch.js';
import type { LocalPetStore } from './contract.js';
import { StoreUnavailableError } from './errors.js';
import { IndexedStore } from './indexed.js';
import { PetIndex } from './pet-index.js';

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

export function openMemoryStore(): LocalPetStore {
  return new MemoryStore();
}
