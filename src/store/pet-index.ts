// The in-memory state of a store: every pet in id order, plus one list per status so that a
// filtered page costs O(log n + limit) however rare the status is.
//
// Only the pet objects are kept, not their JSON text: measured with 1,000,000 pets, keeping
// both costs about 140 MiB more RSS and 750 ms more at open (one stringify per pet), while
// making the text on each read (petJson) costs about 0.1 us per pet returned. The objects
// kept are the ones JSON.parse made from the snapshot, so loading allocates only the
// segments that point at them (8 bytes a pet).
import type { Pet, PetStatus } from '../core/index.js';

/**
 * The index's lists (every pet, and the pets of each status) are kept in segments of
 * SEGMENT_SIZE items: item i is segments[i >>> SEGMENT_BITS][i & SEGMENT_MASK]. Every
 * segment but the last is full, and a full segment never changes again (pets are immutable
 * and the lists only grow), so a snapshot and a restore share full segments by reference and
 * copy at most the last, partial one: O(1) in pets. One array of a million pets, as this once
 * was, made a restore copy 8 MB in one block of 5 to 9 ms.
 */
export const SEGMENT_BITS = 14;
export const SEGMENT_SIZE = 1 << SEGMENT_BITS;
const SEGMENT_MASK = SEGMENT_SIZE - 1;

/** A list in segments (see SEGMENT_SIZE), read up to a count kept beside it. */
export type Segments<T> = ReadonlyArray<ReadonlyArray<T>>;

/** Item `i` of a list in segments (the caller keeps i below the list's count). */
export function itemAt<T>(segments: Segments<T>, i: number): T {
  return (segments[i >>> SEGMENT_BITS] as ReadonlyArray<T>)[i & SEGMENT_MASK] as T;
}

/**
 * The first `count` items of `from` as a list the caller may append to: the full segments
 * shared, the last partial one copied (whoever owns `from` may go on appending to it).
 */
function ownedPrefix<T>(from: Segments<T>, count: number): T[][] {
  const full = count >>> SEGMENT_BITS;
  const out = from.slice(0, full) as T[][];
  const rest = count & SEGMENT_MASK;
  if (rest > 0) out.push((from[full] as ReadonlyArray<T>).slice(0, rest));
  return out;
}

/**
 * Appends `item` to a list in segments that holds `count` items. A segment grown by push has
 * room for up to half as much again; once full it is swapped for an exact copy (the same
 * items: a snapshot holding the one before reads the same), about 16 us once per segment.
 */
function append<T>(segments: T[][], count: number, item: T): void {
  if ((count & SEGMENT_MASK) === 0) {
    segments.push([item]);
    return;
  }
  const last = segments.length - 1;
  const segment = segments[last] as T[];
  segment.push(item);
  if (segment.length === SEGMENT_SIZE) segments[last] = segment.slice();
}

/** Read-only view of the first `count` pets, stable while the store keeps growing. */
export interface IndexView {
  readonly pets: Segments<Readonly<Pet>>;
  readonly count: number;
  readonly nextId: number;
}

/**
 * Per status, the pets with that status, ascending id: the same objects as in the list of
 * all pets (a pointer each, as a position would take), so that a page of one status reads
 * its pets without going through that list.
 */
export interface StatusList {
  pets: Pet[][];
  count: number;
}
export type StatusLists = Record<PetStatus, StatusList>;

/** A status list's segments and its length then. */
export interface StatusState {
  readonly pets: Segments<Readonly<Pet>>;
  readonly count: number;
}

/**
 * The index as it is at one moment, by reference (O(1) to take): the first `count` pets and
 * the first `byStatus[s].count` pets of each status list. Pets are never changed or
 * removed and those lists only grow (a reset or restore swaps in new ones), so the prefixes
 * stay the same while they are read, however long that takes.
 */
export interface IndexState {
  readonly pets: Segments<Readonly<Pet>>;
  readonly count: number;
  readonly byStatus: Readonly<Record<PetStatus, StatusState>>;
  readonly nextId: number;
}

/** The lists a restore gives the index (see ownedLists): the index owns them from then on. */
export interface RestoredLists {
  readonly pets: Pet[][];
  readonly count: number;
  readonly byStatus: StatusLists;
}

/**
 * Lists of `state` for an index to own (it appends to them): every list's full segments
 * shared, its last, partial one copied (ownedPrefix), so at most SEGMENT_SIZE items a list.
 */
export function ownedLists(state: IndexState): RestoredLists {
  const owned = (list: StatusState): StatusList => ({ pets: ownedPrefix(list.pets as Segments<Pet>, list.count), count: list.count });
  const b = state.byStatus;
  return {
    pets: ownedPrefix(state.pets as Segments<Pet>, state.count),
    count: state.count,
    byStatus: { available: owned(b.available), pending: owned(b.pending), sold: owned(b.sold) },
  };
}

function emptyStatusLists(): StatusLists {
  return { available: { pets: [], count: 0 }, pending: { pets: [], count: 0 }, sold: { pets: [], count: 0 } };
}

export class PetIndex {
  /** All pets, ascending id, in segments. Pets are never changed or removed (reset swaps in new lists). */
  #pets: Pet[][] = [];
  #count = 0;
  /** Per status, the pets with that status (see StatusList). */
  #byStatus: StatusLists = emptyStatusLists();
  /** The id the next created pet gets; above every id handed out since the last reset. */
  #nextId = 1;
  /** Bumped when pets already listed may change (load, clear); appends do not bump it. */
  #generation = 0;

  get generation(): number {
    return this.#generation;
  }

  get count(): number {
    return this.#count;
  }

  get nextId(): number {
    return this.#nextId;
  }

  /** Replaces the content with pets already checked to be in ascending id order below nextId. */
  load(pets: Pet[], nextId: number): void {
    const segments: Pet[][] = [];
    for (let i = 0; i < pets.length; i += SEGMENT_SIZE) segments.push(pets.slice(i, i + SEGMENT_SIZE));
    const byStatus = emptyStatusLists();
    for (let i = 0; i < pets.length; i++) {
      const status = (pets[i] as Pet).status;
      if (status !== undefined) {
        const list = byStatus[status];
        append(list.pets, list.count++, pets[i] as Pet);
      }
    }
    this.#pets = segments;
    this.#count = pets.length;
    this.#byStatus = byStatus;
    this.#nextId = nextId;
    this.#generation++;
  }

  /** Appends a pet; the caller guarantees pet.id >= nextId. */
  add(pet: Pet): void {
    append(this.#pets, this.#count++, pet);
    if (pet.status !== undefined) {
      const list = this.#byStatus[pet.status];
      append(list.pets, list.count++, pet);
    }
    this.#nextId = pet.id + 1;
  }

  /** Empties the store; ids restart at 1. New lists, so views taken before stay intact. */
  clear(): void {
    this.#pets = [];
    this.#count = 0;
    this.#byStatus = emptyStatusLists();
    this.#nextId = 1;
    this.#generation++;
  }

  /** The index as it is now, by reference (see IndexState). */
  state(): IndexState {
    const b = this.#byStatus;
    // Each list's count as it is now (the index's own counts go on growing).
    const now = (list: StatusList): StatusState => ({ pets: list.pets, count: list.count });
    return {
      pets: this.#pets,
      count: this.#count,
      byStatus: { available: now(b.available), pending: now(b.pending), sold: now(b.sold) },
      nextId: this.#nextId,
    };
  }

  /**
   * Swaps in lists made from a state (ownedLists: lists this index owns from now on): O(1),
   * however many pets. The caller guarantees they are consistent (as state() gave them).
   */
  restore(lists: RestoredLists, nextId: number): void {
    this.#pets = lists.pets;
    this.#count = lists.count;
    this.#byStatus = lists.byStatus;
    this.#nextId = nextId;
    this.#generation++;
  }

  view(): IndexView {
    return { pets: this.#pets, count: this.#count, nextId: this.#nextId };
  }

  get(id: number): Pet | undefined {
    // Ids are usually dense from 1, so try the direct slot before searching. (Past 2^32 or
    // below 1 the shift reads a wrong slot or none, and the id check sends it to the search.)
    const i = id - 1;
    const segment = this.#pets[i >>> SEGMENT_BITS];
    if (segment !== undefined) {
      const guess = segment[i & SEGMENT_MASK];
      if (guess !== undefined && guess.id === id) return guess;
    }
    const position = firstAfter(this.#pets, i);
    if (position >= this.#count) return undefined;
    const pet = itemAt(this.#pets, position);
    return pet.id === id ? pet : undefined;
  }

  /** Up to `limit` pets with id > afterId (if given) and the status (if given), ascending id. */
  list(status: PetStatus | undefined, afterId: number | undefined, limit: number): Pet[] {
    const segments = status === undefined ? this.#pets : this.#byStatus[status].pets;
    const out: Pet[] = [];
    // Segment by segment: each one a plain array, read without the shift and mask.
    const first = firstAfter(segments, afterId ?? -Infinity);
    let k = first & SEGMENT_MASK;
    for (let s = first >>> SEGMENT_BITS; s < segments.length && out.length < limit; s++, k = 0) {
      const segment = segments[s] as Pet[];
      const end = Math.min(segment.length, k + limit - out.length);
      for (; k < end; k++) out.push(segment[k] as Pet);
    }
    return out;
  }
}

/**
 * The index in `segments` (a list the index owns: its segments hold exactly what it
 * appended) of the first pet with id > after, or the list's length if there is none: a binary
 * search over the segments' first pets, then one within a segment.
 */
function firstAfter(segments: Pet[][], after: number): number {
  let lo = 0;
  let hi = segments.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (((segments[mid] as Pet[])[0] as Pet).id > after) hi = mid;
    else lo = mid + 1;
  }
  if (lo === 0) return 0;
  const segment = segments[lo - 1] as Pet[];
  let a = 0;
  let b = segment.length;
  while (a < b) {
    const mid = (a + b) >>> 1;
    if ((segment[mid] as Pet).id > after) b = mid;
    else a = mid + 1;
  }
  return ((lo - 1) << SEGMENT_BITS) + a;
}
