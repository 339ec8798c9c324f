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
// Memory is bounded in bytes, counted as V8 stores the pets (kept-reads.ts): pets by id and
// full pages together within maxBytes, a pet held once however many pages it is on, oldest
// holders dropped first. A kept answer is handed out as a copy: the caller may shorten it.
import type { NewPet } from '../../core/index.js';
import type { StoreGeneration } from '../../core/index.js';
import type { CreateOutcome, IdempotencyKey, ListQuery, PetStore, SeedPet, StoredPet } from '../contract.js';
import { StoreInputError, StoreUnreachableError } from '../errors.js';
import type { CreateWatch } from './create-batch.js';
import { KeptReads } from './kept-reads.js';

/** What the wrapper needs of the PostgreSQL store (reads answered with promises). */
export interface PagedPetStore extends PetStore {
  list(q: ListQuery): Promise<StoredPet[]>;
  /** Tells `watch` of every pet create() makes, before that create is answered (create-batch.ts). */
  watchCreates(watch: CreateWatch): void;
}

export interface ReadCacheOptions {
  /** Bytes held for pets and full pages together, counted as V8 stores them (default 32 MiB). */
  readonly maxBytes?: number;
}

export const DEFAULT_MAX_BYTES = 32 * 1024 * 1024;

/** Counts, for tests and the capacity bench. */
export interface ReadCacheStats {
  petHits: number;
  pageHits: number;
  misses: number;
}

export class ReadCachedStore implements PetStore {
  readonly #inner: PagedPetStore;
  readonly #generation: StoreGeneration;
  readonly #kept: KeptReads;
  /** Moves on whenever the generation changes; a fill started in an older epoch is dropped. */
  #epoch = 0;
  /** Counts down from -1: each read of `generation` or `count` that must never match again. */
  #never = 0;
  readonly stats: ReadCacheStats = { petHits: 0, pageHits: 0, misses: 0 };

  constructor(inner: PagedPetStore, generation: StoreGeneration, opts: ReadCacheOptions = {}) {
    this.#inner = inner;
    this.#generation = generation;
    this.#kept = new KeptReads(opts.maxBytes ?? DEFAULT_MAX_BYTES);
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

  /** Pets (each once), pages and page references held now. */
  get size(): { pets: number; pages: number; pagePets: number } {
    return this.#kept.size;
  }

  /** Bytes held now, as counted against the bound. */
  get bytes(): number {
    return this.#kept.bytes;
  }

  get(id: number): StoredPet | undefined | Promise<StoredPet | undefined> {
    if (this.#generation.token === undefined) return this.#inner.get(id);
    const hit = this.#kept.pet(id);
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
    const hit = this.#kept.page(key);
    if (hit !== undefined) {
      this.stats.pageHits++;
      return hit.slice();
    }
    this.stats.misses++;
    const epoch = this.#epoch;
    return this.#inner.list(q).then((rows) => {
      // All `limit` came back: ids being visible in order, the answer is final.
      if (rows.length === q.limit && this.#current(epoch)) this.#kept.keepPage(key, rows);
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
    this.#kept.clear();
  }

  /** True while the epoch a read began in holds and the generation is known: it may be kept. */
  #current(epoch: number): boolean {
    return epoch === this.#epoch && this.#generation.token !== undefined;
  }

  #keepPet(stored: StoredPet, epoch: number): void {
    if (this.#current(epoch)) this.#kept.keepPet(stored);
  }
}

function pageKey(q: ListQuery): string {
  return `${q.status ?? ''}:${q.afterId ?? 0}:${q.limit}`;
}
