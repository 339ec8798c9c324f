// The page cache of GET /pets: serialized pages, checked against the store's page version.
import type { PageVersion } from '../store/index.js';

export interface CachedPage {
  readonly generation: number;
  /** Pets in the store when the page was built; a last page is valid only while this holds. */
  readonly count: number;
  /**
   * Bytes, not a string: node writes a Buffer body beside the header block, whereas a string
   * body is first concatenated with it, a fresh copy per request.
   */
  readonly body: Buffer;
  /** Id of the page's last pet when more pets follow, else undefined. */
  readonly nextAfter: number | undefined;
  /** The next link as last built, and the base URL it was built for. */
  link?: { readonly base: string; readonly value: string };
  /** Read since the cache last looked at it for eviction (see PageCache). */
  used?: boolean;
}

/**
 * Serialized pages of GET /pets, so the hot read does not rebuild the same JSON on every
 * request. Pets are immutable and ids ascend, so a page that has a successor never changes
 * until a reset (the store's generation); the last page is valid while no pet was added.
 *
 * Bounded in entries and in bytes (a page of long names is far larger than a page of short
 * ones). Past either bound the least recently used pages go first, by the second-chance
 * (CLOCK) approximation of LRU: a hit only sets a flag, so the hot read pays one store and
 * no reordering; eviction walks from the oldest entry, and a flagged one is moved to the
 * back with its flag cleared instead of being dropped.
 */
export class PageCache {
  static readonly MAX_PAGES = 1024;
  static readonly MAX_BYTES = 16 * 1024 * 1024;
  readonly #pages = new Map<string, CachedPage>();
  readonly #maxPages: number;
  readonly #maxBytes: number;
  #bytes = 0;

  constructor(maxPages = PageCache.MAX_PAGES, maxBytes = PageCache.MAX_BYTES) {
    this.#maxPages = maxPages;
    this.#maxBytes = maxBytes;
  }

  /** Bytes of page bodies held. */
  get bytes(): number {
    return this.#bytes;
  }

  get size(): number {
    return this.#pages.size;
  }

  get(key: string, store: PageVersion): CachedPage | undefined {
    const page = this.#pages.get(key);
    if (page === undefined || page.generation !== store.generation) return undefined;
    if (page.nextAfter === undefined && page.count !== store.count) return undefined;
    page.used = true;
    return page;
  }

  set(key: string, page: CachedPage): void {
    const size = page.body.length;
    this.#drop(key);
    if (size > this.#maxBytes) return; // would evict everything else for one page
    while (this.#pages.size >= this.#maxPages || this.#bytes + size > this.#maxBytes) this.#evictOne();
    page.used = false;
    this.#pages.set(key, page);
    this.#bytes += size;
  }

  #drop(key: string): void {
    const page = this.#pages.get(key);
    if (page === undefined) return;
    this.#pages.delete(key);
    this.#bytes -= page.body.length;
  }

  /** Drops the least recently used page (CLOCK): used ones get a second chance at the back. */
  #evictOne(): void {
    for (const [key, page] of this.#pages) {
      this.#pages.delete(key);
      if (page.used === true) {
        page.used = false;
        this.#pages.set(key, page);
        continue;
      }
      this.#bytes -= page.body.length;
      return;
    }
  }
}
