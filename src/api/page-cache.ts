// The answers cached as bytes: the pages of GET /pets and each pet of GET /pets/{petId},
// checked against the store's page version. Both are bounded in entries and in bytes, and the
// bytes are what an entry really costs: its body in a Buffer of its own (never a slice keeping
// a shared pool slab alive), its key, its next link, and the objects around them.
import { BUFFER_OVERHEAD, ownedBuffer, ownedString, stringBytes, type PageVersion } from '../store/index.js';

/** A 200 answer made of a cached body, kept with it so that a hit allocates nothing (a Reply). */
export interface CachedReply {
  readonly status: number;
  readonly body: Buffer;
  readonly headers?: Readonly<Record<string, string>>;
}

export interface CachedPage {
  readonly generation: number;
  /** Pets in the store when the page was built; a last page is valid only while this holds. */
  readonly count: number;
  /**
   * Bytes, not a string: node writes a Buffer body beside the header block, whereas a string
   * body is first concatenated with it, a fresh copy per request. Once kept, a Buffer of
   * its own (BoundedBytes.set).
   */
  body: Buffer;
  /** Id of the page's last pet when more pets follow, else undefined. */
  readonly nextAfter: number | undefined;
  /** The next link as last built, the base URL it was built for, and the answer that carries it. */
  link?: { readonly base: string; readonly value: string; readonly reply: CachedReply } | undefined;
  /** The answer of a last page (no next link), made on its first hit. */
  reply?: CachedReply | undefined;
  /** The limit and status filter the page was asked with: what its next link carries. */
  readonly limit: number;
  readonly status: string | undefined;
  /** Read since the cache last looked at it for eviction (see BoundedBytes). */
  used?: boolean;
}

/** One pet's 200 body. Pets never change: it is valid until a reset (the generation). */
export interface CachedPet {
  readonly generation: number;
  /** Once kept, a Buffer of its own (BoundedBytes.set). */
  body: Buffer;
  /** The answer, made on the first hit. */
  reply?: CachedReply | undefined;
  used?: boolean;
}

/** An entry's record, its Map slot and the generation and count numbers (counted high). */
const ENTRY_OVERHEAD = 256;
/** A number key: a heap number at most (a small integer is stored in the Map slot itself). */
const NUMBER_KEY_BYTES = 16;
/**
 * A page keeps its next link only up to this many characters (the Host header it is built from
 * may be long), and every page counts room for one that long and for its base URL, at two bytes
 * a character: its bytes never grow after they were counted.
 */
export const MAX_KEPT_LINK = 256;
const LINK_BYTES = 64 + 2 * (16 + 2 * MAX_KEPT_LINK);

/**
 * A map of byte answers bounded in entries and in bytes (a page of long names is far larger
 * than a page of short ones). Past either bound the least recently used entries go first, by
 * the second-chance (CLOCK) approximation of LRU: a hit only sets a flag, so the hot read
 * pays one store and no reordering; eviction walks from the oldest entry, and a flagged one
 * is moved to the back with its flag cleared instead of being dropped.
 */
class BoundedBytes<K extends string | number, T extends { body: Buffer; used?: boolean }> {
  protected readonly entries = new Map<K, T>();
  readonly #maxEntries: number;
  readonly #maxBytes: number;
  /** What each entry costs beside its body and key (a page: room for its link). */
  readonly #entryBytes: number;
  #bytes = 0;

  constructor(maxEntries: number, maxBytes: number, entryBytes = ENTRY_OVERHEAD) {
    this.#maxEntries = maxEntries;
    this.#maxBytes = maxBytes;
    this.#entryBytes = entryBytes;
  }

  /** Bytes held: bodies, keys and entries, as they cost in memory. */
  get bytes(): number {
    return this.#bytes;
  }

  get size(): number {
    return this.entries.size;
  }

  /**
   * Keeps `entry` under `key`. Its body is copied out of a shared pool slab if it is in one,
   * and the key into a string of its own (it may be a slice of the request line).
   */
  set(key: K, entry: T): void {
    this.forget();
    this.#drop(key);
    const size = this.cost(key, entry.body.length);
    if (size > this.#maxBytes) return; // would evict everything else for one entry
    while (this.entries.size >= this.#maxEntries || this.#bytes + size > this.#maxBytes) this.#evictOne();
    entry.used = false;
    entry.body = ownedBuffer(entry.body);
    this.entries.set(typeof key === 'string' ? (ownedString(key) as K) : key, entry);
    this.#bytes += size;
  }

  /** What an entry with this key and a body of this length costs against the bound. */
  cost(key: K, bodyLength: number): number {
    return this.#entryBytes + (typeof key === 'string' ? stringBytes(key) : NUMBER_KEY_BYTES) + bodyLength + BUFFER_OVERHEAD;
  }

  /** Called before any change to the entries (a subclass that remembers one forgets it). */
  protected forget(): void {}

  #drop(key: K): void {
    const entry = this.entries.get(key);
    if (entry === undefined) return;
    this.entries.delete(key);
    this.#bytes -= this.cost(key, entry.body.length);
  }

  /** Drops the least recently used entry (CLOCK): used ones get a second chance at the back. */
  #evictOne(): void {
    for (const [key, entry] of this.entries) {
      this.entries.delete(key);
      if (entry.used === true) {
        entry.used = false;
        this.entries.set(key, entry);
        continue;
      }
      this.#bytes -= this.cost(key, entry.body.length);
      return;
    }
  }
}

/**
 * Serialized pages of GET /pets, keyed by the raw query string, so the hot read neither
 * parses the query nor rebuilds the same JSON on every request. Pets are immutable and ids
 * ascend, so a page that has a successor never changes until a reset (the store's
 * generation); the last page is valid while no pet was added.
 */
export class PageCache extends BoundedBytes<string, CachedPage> {
  static readonly MAX_PAGES = 1024;
  static readonly MAX_BYTES = 16 * 1024 * 1024;
  /**
   * The page last found and its key (a copy of its own): a client asks for the same page again
   * and again, and its query string, a fresh string each time, is then compared with this one
   * instead of being hashed for the Map. Any change to the entries forgets it.
   */
  #lastKey: string | undefined = undefined;
  #lastPage: CachedPage | undefined = undefined;

  constructor(maxPages = PageCache.MAX_PAGES, maxBytes = PageCache.MAX_BYTES) {
    super(maxPages, maxBytes, ENTRY_OVERHEAD + LINK_BYTES);
  }

  protected override forget(): void {
    this.#lastKey = undefined;
    this.#lastPage = undefined;
  }

  get(key: string, store: PageVersion): CachedPage | undefined {
    let page: CachedPage | undefined;
    if (key === this.#lastKey) page = this.#lastPage;
    else {
      page = this.entries.get(key);
      if (page !== undefined) {
        this.#lastKey = ownedString(key);
        this.#lastPage = page;
      }
    }
    if (page === undefined || page.generation !== store.generation) return undefined;
    if (page.nextAfter === undefined && page.count !== store.count) return undefined;
    page.used = true;
    return page;
  }
}

/**
 * Each pet's answer of GET /pets/{petId} as bytes, keyed by the pet's id (a number: the path
 * parameter is a fresh string on every request, and hashing it for the lookup cost more than
 * reading its digits). A pet never changes once stored, so an entry is valid until a reset or
 * a restore (the store's generation moves); a pet not found is never cached.
 */
export class PetCache extends BoundedBytes<number, CachedPet> {
  static readonly MAX_PETS = 16_384;
  static readonly MAX_BYTES = 8 * 1024 * 1024;

  constructor(maxPets = PetCache.MAX_PETS, maxBytes = PetCache.MAX_BYTES) {
    super(maxPets, maxBytes);
  }

  get(id: number, store: PageVersion): CachedPet | undefined {
    const pet = this.entries.get(id);
    if (pet === undefined || pet.generation !== store.generation) return undefined;
    pet.used = true;
    return pet;
  }
}
