// What the memory and file stores share: reads straight from the in-memory index, and every
// write wrapped as an operation handed to the store's own `run` (apply now, or queue for disk).
import { checkSeedInput, submit } from './batch.js';
import type { Op } from './batch.js';
import type { ListQuery, LocalPetStore, SeedPet, StoredPet } from './contract.js';
import type { PetIndex } from './pet-index.js';
import { readPage, readPet } from './reads.js';
import type { NewPet } from '../core/index.js';

export abstract class IndexedStore implements LocalPetStore {
  protected readonly index: PetIndex;

  constructor(index: PetIndex) {
    this.index = index;
  }

  get count(): number {
    return this.index.count;
  }

  get generation(): number {
    return this.index.generation;
  }

  get(id: number): StoredPet | undefined {
    return readPet(this.index, id);
  }

  list(q: ListQuery): StoredPet[] {
    return readPage(this.index, q);
  }

  create(input: NewPet): Promise<StoredPet> {
    return submit((op) => this.run(op), (s) => ({ kind: 'create', input, ...s }));
  }

  seed(pets: ReadonlyArray<SeedPet>): Promise<StoredPet[]> {
    return submit((op) => this.run(op), (s) => {
      checkSeedInput(pets);
      return { kind: 'seed', input: pets, ...s };
    });
  }

  reset(): Promise<void> {
    return submit((op) => this.run(op), (s) => ({ kind: 'reset', ...s }));
  }

  abstract close(): Promise<void>;

  /** Carries out (or queues) one write operation, settling it when done. */
  protected abstract run(op: Op): void;
}
