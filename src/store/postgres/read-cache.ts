// Reads from memory where the answer cannot change, for the PostgreSQL store: a wrapper with
// the same PetStore face, in front of PostgresStore, one per process.
//
// What is kept, and why it stays right:
// - Pets by id. A pet never changes once created (there is no update and no delete), so a
//   pet read once answers get() again from memory. Unknown ids are not kept: the pet may be
//   created the next instant, by any process.
// - Full answers of list(): the `limit` pets after a cursor for one status filter, kept only
//   when all `limit` came back. The store makes ids visible in the order they were given: once
//   id N is visible, every id below N is visible or will never exist (creates and seeds draw
//   their ids under one lock held to commit). The last pet of a full answer is visible, so no
//   pet can ever appear between the cursor and it: the answer is final. (The API asks for one
//   pet more than it shows, so a page it shows is kept only when a further pet proved it full.)
//   A shorter answer, the last page, is not kept: it may grow.
// - What empties both: only a reset (ids restart at 1, pets vanish) and, to be safe, a seed.
//   Both advance the store generation in Redis after they commit and before they answer
//   (core/store-generation.ts). Every request asks Redis for its limits before it reads pets,
//   and that reply carries the generation: a request that arrives after a reset's answer has
//   been sent sees the new generation, this cache is emptied before its read, and it is
//   answered from PostgreSQL. While the generation is not known (Redis away, no reply yet)
//   nothing is served from memory or put into it.
// - A read that was started under one generation never fills the cache after it has changed
//   (each fill checks the epoch it started in), so an answer read before a reset cannot be
//   kept for requests after it.
//
// Memory is bounded: at most maxPets pets by id and maxPagePets pet references in pages
// (at most 101 each), oldest entries dropped first. A kept answer is handed out as a copy: the
// caller may shorten it.
import type { NewPet } from '../../core/index.js';
import type { StoreGeneration } from '../../core/index.js';
import type { CreateOutcome, IdempotencyKey, ListQuery, PetStore, SeedPet, StoredPet } from '../contract.js';
import { StoreInputError, StoreUnreachableError } from '../errors.js';
import type { CreateWatch } from './create-batch.js';

/** What the wrapper needs of the PostgreSQL store (reads answered with promises). */
export interface PagedPetStore extends PetStore {
  list(q: ListQuery): Promise<StoredPet[]>;
  /** Tells `watch` of every pet create() makes, before that create is answered (create-batch.ts). */
  watchCreates(watch: CreateWatch): void;
}

export interface ReadCacheOptions {
  /** Pets kept by id (default 50,000: about 15 MB). */
  readonly maxPets?: number;
  /** Pet references kept in full pages, over all pages (default 100,000). */
  readonly maxPagePets?: number;
}

export const DEFAULT_MAX_PETS = 50_000;
export const DEFAULT_MAX_PAGE_PETS = 100_000;

/** Counts, for tests and the capacity bench. */
export interface ReadCacheStats {
  petHits: number;
  pageHits: number;
  misses: number;
}

export class ReadCachedStore implements PetStore {
  readonly #inner: PagedPetStore;
  readonly #generation: StoreGeneration;
  readonly #maxPets: number;
  readonly #maxPagePets: number;
  /** Insertion order is eviction order (Map keeps it). */
  readonly #pets = new Map<number, StoredPet>();
  readonly #pages = new Map<string, StoredPet[]>();
  #pagePets = 0;
  /** Moves on whenever the generation changes; a fill started in an older epoch is dropped. */
  #epoch = 0;
  /** Counts down from -1: each read of `generation` or `count` that must never match again. */
  #never = 0;
  readonly stats: ReadCacheStats = { petHits: 0, pageHits: 0, misses: 0 };

  constructor(inner: PagedPetStore, generation: StoreGeneration, opts: ReadCacheOptions = {}) {
    this.#inner = inner;
    this.#generation = generation;
    this.#maxPets = opts.maxPets ?? DEFAULT_MAX_PETS;
    this.#maxPagePets = opts.maxPagePets ?? DEFAULT_MAX_PAGE_PETS;
    generation.onChange(() => this.#clear());
    inner.watchCreates({ epoch: () => this.#epoch, made: (stored, epoch) => this.#keepPet(stored, epoch) });
  }

  /**
   * The page version (store/contract.ts) that lets the HTTP layer keep answers as bytes, as it
   * does for the file store: `generation` is the cache's epoch while the store generation is
   * known (it moves on with every change of it, so bytes kept before a reset or a seed are
   * never served after it), and a value never given before while it is unknown (nothing
   * stamped then or earlier is served). `count` is a value never given before on every read:
   * another process may add pets at any time, so a last page (valid only while `count` holds)
   * is never served from bytes, only a page followed by a further pet, which is final for the
   * reason full pages are kept here.
   */
  get generation(): number {
    return this.#generation.token === undefined ? --this.#never : this.#epoch;
  }

  get count(): number {
    return --this.#never;
  }

  /** Pets and page references held now. */
  get size(): { pets: number; pages: number; pagePets: number } {
    return { pets: this.#pets.size, pages: this.#pages.size, pagePets: this.#pagePets };
  }

  get(id: number): StoredPet | undefined | Promise<StoredPet | undefined> {
    if (this.#generation.token === undefined) return this.#inner.get(id);
    const hit = this.#pets.get(id);
    if (hit !== undefined) {
      this.stats.petHits++;
      return hit;
    }
    this.stats.misses++;
    const epoch = this.#epoch;
    const read = this.#inner.get(id);
    if (read === undefined || !(read instanceof Promise)) {
      if (read !== undefined) this.#keepPet(read, epoch);
      return read;
    }
    return read.then((stored) => {
      if (stored !== undefined) this.#keepPet(stored, epoch);
      return stored;
    });
  }

  list(q: ListQuery): StoredPet[] | Promise<StoredPet[]> {
    if (this.#generation.token === undefined) return this.#inner.list(q);
    const key = pageKey(q);
    const hit = this.#pages.get(key);
    if (hit !== undefined) {
      this.stats.pageHits++;
      return hit.slice();
    }
    this.stats.misses++;
    const epoch = this.#epoch;
    return this.#inner.list(q).then((rows) => {
      // All `limit` came back: ids being visible in order, the answer is final.
      if (rows.length === q.limit) this.#keepPage(key, rows.slice(), epoch);
      return rows;
    });
  }

  /**
   * A created pet is kept, as a pet read: the inner store hands it to the watch set up in the
   * constructor, from the epoch its batch was handed over in (one promise per create, not three).
   */
  create(input: NewPet): Promise<StoredPet> {
    return this.#inner.create(input);
  }

  createIdempotent(input: NewPet, idempotency: IdempotencyKey): Promise<CreateOutcome> {
    if (this.#inner.createIdempotent === undefined) return Promise.reject(new Error('the store has no idempotent creates'));
    return this.#inner.createIdempotent(input, idempotency);
  }

  /** Committed, then the generation moves on for every process before the seed is answered. */
  async seed(pets: ReadonlyArray<SeedPet>): Promise<StoredPet[]> {
    let stored: StoredPet[];
    try {
      stored = await this.#inner.seed(pets);
    } catch (err) {
      // A refused seed wrote nothing; any other failure may have committed (an answer lost
      // on the way back), so the generation moves on all the same.
      if (!(err instanceof StoreInputError)) await this.#advance();
      throw err;
    }
    await this.#advance();
    return stored;
  }

  /** Committed, then the generation moves on for every process before the reset is answered. */
  async reset(): Promise<void> {
    try {
      await this.#inner.reset();
    } finally {
      await this.#advance();
    }
  }

  /**
   * Moves the generation on. If Redis does not take it, other processes may still hold what
   * was read before: the reset or seed is then answered 503 (done, but not yet known to every
   * process; repeating it is harmless), never 200.
   */
  async #advance(): Promise<void> {
    try {
      await this.#generation.advance();
    } catch (err) {
      throw new StoreUnreachableError(`Redis did not take the new store generation, so other processes may still answer from their cache: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  get reachable(): boolean {
    return this.#inner.reachable !== false;
  }

  close(): Promise<void> {
    this.#clear();
    return this.#inner.close();
  }

  #clear(): void {
    this.#epoch++;
    this.#pets.clear();
    this.#pages.clear();
    this.#pagePets = 0;
  }

  #keepPet(stored: StoredPet, epoch: number): void {
    if (epoch !== this.#epoch || this.#generation.token === undefined || this.#maxPets === 0) return;
    if (this.#pets.has(stored.pet.id)) return;
    if (this.#pets.size >= this.#maxPets) {
      const oldest = this.#pets.keys().next();
      if (!oldest.done) this.#pets.delete(oldest.value);
    }
    this.#pets.set(stored.pet.id, stored);
  }

  #keepPage(key: string, page: StoredPet[], epoch: number): void {
    if (epoch !== this.#epoch || this.#generation.token === undefined) return;
    for (const stored of page) this.#keepPet(stored, epoch);
    if (page.length > this.#maxPagePets || this.#pages.has(key)) return;
    while (this.#pagePets + page.length > this.#maxPagePets) {
      const oldest = this.#pages.entries().next();
      if (oldest.done) break;
      this.#pages.delete(oldest.value[0]);
      this.#pagePets -= oldest.value[1].length;
    }
    this.#pages.set(key, page);
    this.#pagePets += page.length;
  }
}

function pageKey(q: ListQuery): string {
  return `${q.status ?? ''}:${q.afterId ?? 0}:${q.limit}`;
}
