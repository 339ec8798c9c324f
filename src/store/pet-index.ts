// The in-memory state of a store: every pet in id order, plus one list per status so that a
// filtered page costs O(log n + limit) however rare the status is.
//
// Only the pet objects are kept, not their JSON text: measured with 1,000,000 pets, keeping
// both costs about 140 MiB more RSS and 750 ms more at open (one stringify per pet), while
// making the text on each read (petJson) costs about 0.1 us per pet returned. The objects
// kept are the ones JSON.parse made from the snapshot, so loading allocates nothing more.
import type { Pet, PetStatus } from '../core/index.js';

/** Read-only view of the first `count` pets, stable while the store keeps growing. */
export interface IndexView {
  readonly pets: ReadonlyArray<Readonly<Pet>>;
  readonly count: number;
  readonly nextId: number;
}

type StatusLists = Record<PetStatus, number[]>;

/**
 * The index as it is at one moment, by reference (O(1) to take): the first `count` pets and
 * the first `byStatus[s]` positions of each status list. Pets are never changed or removed
 * and those arrays only grow (a reset or restore swaps in new ones), so the prefixes stay the
 * same while they are copied, however long that takes (snapshots copy them in chunks).
 */
export interface IndexState {
  readonly pets: ReadonlyArray<Readonly<Pet>>;
  readonly count: number;
  readonly byStatus: Readonly<Record<PetStatus, { readonly positions: readonly number[]; readonly count: number }>>;
  readonly nextId: number;
}

function emptyStatusLists(): StatusLists {
  return { available: [], pending: [], sold: [] };
}

export class PetIndex {
  /** All pets, ascending id. Pets are never changed or removed (reset swaps in new arrays). */
  #pets: Pet[] = [];
  /** Per status, the positions in #pets of the pets with that status, ascending. */
  #byStatus: StatusLists = emptyStatusLists();
  /** The id the next created pet gets; above every id handed out since the last reset. */
  #nextId = 1;
  /** Bumped when pets already listed may change (load, clear); appends do not bump it. */
  #generation = 0;

  get generation(): number {
    return this.#generation;
  }

  get count(): number {
    return this.#pets.length;
  }

  get nextId(): number {
    return this.#nextId;
  }

  /** Replaces the content with pets already checked to be in ascending id order below nextId. */
  load(pets: Pet[], nextId: number): void {
    const byStatus = emptyStatusLists();
    for (let i = 0; i < pets.length; i++) {
      const status = (pets[i] as Pet).status;
      if (status !== undefined) byStatus[status].push(i);
    }
    this.#pets = pets;
    this.#byStatus = byStatus;
    this.#nextId = nextId;
    this.#generation++;
  }

  /** Appends a pet; the caller guarantees pet.id >= nextId. */
  add(pet: Pet): void {
    const position = this.#pets.push(pet) - 1;
    if (pet.status !== undefined) this.#byStatus[pet.status].push(position);
    this.#nextId = pet.id + 1;
  }

  /** Empties the store; ids restart at 1. New arrays, so views taken before stay intact. */
  clear(): void {
    this.#pets = [];
    this.#byStatus = emptyStatusLists();
    this.#nextId = 1;
    this.#generation++;
  }

  /** The index as it is now, by reference (see IndexState). */
  state(): IndexState {
    const b = this.#byStatus;
    return {
      pets: this.#pets,
      count: this.#pets.length,
      byStatus: {
        available: { positions: b.available, count: b.available.length },
        pending: { positions: b.pending, count: b.pending.length },
        sold: { positions: b.sold, count: b.sold.length },
      },
      nextId: this.#nextId,
    };
  }

  /**
   * Swaps in arrays made from a state (copies the caller owns from now on): O(1), however
   * many pets. The caller guarantees they are consistent (as state() gave them).
   */
  restore(pets: Pet[], byStatus: StatusLists, nextId: number): void {
    this.#pets = pets;
    this.#byStatus = byStatus;
    this.#nextId = nextId;
    this.#generation++;
  }

  view(): IndexView {
    return { pets: this.#pets, count: this.#pets.length, nextId: this.#nextId };
  }

  get(id: number): Pet | undefined {
    const pets = this.#pets;
    // Ids are usually dense from 1, so try the direct slot before searching.
    const guess = pets[id - 1];
    if (guess !== undefined && guess.id === id) return guess;
    const position = this.#firstAfter(id - 1, pets.length, (i) => i);
    const pet = pets[position];
    return pet !== undefined && pet.id === id ? pet : undefined;
  }

  /** Up to `limit` pets with id > afterId (if given) and the status (if given), ascending id. */
  list(status: PetStatus | undefined, afterId: number | undefined, limit: number): Pet[] {
    const pets = this.#pets;
    const out: Pet[] = [];
    const after = afterId ?? -Infinity;
    if (status === undefined) {
      for (let i = this.#firstAfter(after, pets.length, (p) => p); i < pets.length && out.length < limit; i++) {
        out.push(pets[i] as Pet);
      }
      return out;
    }
    const positions = this.#byStatus[status];
    const start = this.#firstAfter(after, positions.length, (k) => positions[k] as number);
    for (let k = start; k < positions.length && out.length < limit; k++) {
      out.push(pets[positions[k] as number] as Pet);
    }
    return out;
  }

  /**
   * Binary search: the first k in [0, length) whose pet (#pets[position(k)]) has id > after,
   * or length if there is none.
   */
  #firstAfter(after: number, length: number, position: (k: number) => number): number {
    const pets = this.#pets;
    let lo = 0;
    let hi = length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((pets[position(mid)] as Pet).id > after) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  }
}
