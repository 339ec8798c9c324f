// What the read cache (read-cache.ts) holds: pets by id and full pages, within one bound in
// bytes for both, counted as V8 stores them (memory-cost.ts), so the bound holds for any name.
//
// A pet is held once, however many holders it has: a page keeps the very objects held by id
// (a pet read again on a page is not a second copy), and a pet held by a page answers get()
// too. Each pet counts its holders (the by-id list, and each page it is on) and is counted in
// the bytes, and dropped, with its last holder. Holders leave in the order they came (pets
// read or created by id, and pages, in one queue): oldest first.
import type { StoredPet } from '../contract.js';
import { STRING_BUILT_SLACK, stringBytes } from '../memory-cost.js';

/**
 * A pet beside its text: the pet and StoredPet objects, a heap number, the status string, its
 * entries in two maps and this record (about 300 bytes measured; counted high).
 */
const PET_OVERHEAD = 512;
/** A page beside its pets: the array, its record and its entry in the queue, and 8 bytes a pet. */
const PAGE_OVERHEAD = 256;

/** A pet held, with what it costs and who holds it. */
interface HeldPet {
  readonly stored: StoredPet;
  readonly bytes: number;
  /** Held by id (read or created by id): in the queue under its id. */
  byId: boolean;
  /** Pages it is on. */
  pages: number;
}

interface HeldPage {
  readonly pets: StoredPet[];
  readonly bytes: number;
}

/** What one pet costs in memory, its texts counted at their width. */
export function petBytes(stored: StoredPet): number {
  return PET_OVERHEAD + stringBytes(stored.pet.name) + stringBytes(stored.json) + STRING_BUILT_SLACK;
}

export class KeptReads {
  readonly #maxBytes: number;
  /** Every pet held, by id. */
  readonly #pets = new Map<number, HeldPet>();
  /** The holders in arrival order: a number is a pet held by id, a string a page's key. */
  readonly #queue = new Map<number | string, HeldPet | HeldPage>();
  #pages = 0;
  #pagePets = 0;
  #bytes = 0;

  constructor(maxBytes: number) {
    this.#maxBytes = maxBytes;
  }

  get bytes(): number {
    return this.#bytes;
  }

  get size(): { pets: number; pages: number; pagePets: number } {
    return { pets: this.#pets.size, pages: this.#pages, pagePets: this.#pagePets };
  }

  pet(id: number): StoredPet | undefined {
    return this.#pets.get(id)?.stored;
  }

  page(key: string): StoredPet[] | undefined {
    return (this.#queue.get(key) as HeldPage | undefined)?.pets;
  }

  clear(): void {
    this.#pets.clear();
    this.#queue.clear();
    this.#pages = 0;
    this.#pagePets = 0;
    this.#bytes = 0;
  }

  /** Holds a pet by id (a pet already held by a page keeps its object and is not counted again). */
  keepPet(stored: StoredPet): void {
    const id = stored.pet.id;
    const held = this.#pets.get(id);
    if (held?.byId === true) return;
    const cost = held === undefined ? petBytes(stored) : 0;
    if (cost > this.#maxBytes) return;
    if (!this.#makeRoom(cost, held)) return;
    if (held === undefined) {
      const fresh: HeldPet = { stored, bytes: cost, byId: true, pages: 0 };
      this.#pets.set(id, fresh);
      this.#queue.set(id, fresh);
      this.#bytes += cost;
    } else {
      held.byId = true;
      this.#queue.set(id, held);
    }
  }

  /**
   * Holds a full page. Its pets already held are shared: the page keeps those objects, not
   * the rows just read, and only pets new to the cache add their bytes.
   */
  keepPage(key: string, rows: StoredPet[]): void {
    if (this.#queue.has(key)) return;
    const own = PAGE_OVERHEAD + stringBytes(key) + 8 * rows.length;
    // Room is made for the pets not held yet; making it may drop some that were, which then
    // count in full: so until what the page adds fits.
    for (;;) {
      let cost = own;
      for (const stored of rows) if (!this.#pets.has(stored.pet.id)) cost += petBytes(stored);
      if (cost > this.#maxBytes) return;
      if (this.#bytes + cost <= this.#maxBytes) break;
      if (!this.#makeRoom(cost, undefined)) return;
    }
    const pets = new Array<StoredPet>(rows.length);
    let added = own;
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i] as StoredPet;
      let held = this.#pets.get(row.pet.id);
      if (held === undefined) {
        held = { stored: row, bytes: petBytes(row), byId: false, pages: 0 };
        this.#pets.set(row.pet.id, held);
        added += held.bytes;
      }
      held.pages++;
      pets[i] = held.stored;
    }
    this.#queue.set(key, { pets, bytes: own });
    this.#bytes += added;
    this.#pages++;
    this.#pagePets += rows.length;
  }

  /**
   * Lets the oldest holders go until `cost` more bytes fit; false if that cannot be done
   * without dropping `keep` (a pet about to gain a holder).
   */
  #makeRoom(cost: number, keep: HeldPet | undefined): boolean {
    while (this.#bytes + cost > this.#maxBytes) {
      const oldest = this.#queue.entries().next();
      if (oldest.done) return false;
      const [key, holder] = oldest.value;
      if (holder === keep) return false;
      this.#queue.delete(key);
      if (typeof key === 'number') {
        const held = holder as HeldPet;
        held.byId = false;
        this.#release(held);
      } else {
        const page = holder as HeldPage;
        this.#bytes -= page.bytes;
        this.#pages--;
        this.#pagePets -= page.pets.length;
        for (const stored of page.pets) {
          const held = this.#pets.get(stored.pet.id) as HeldPet;
          held.pages--;
          this.#release(held);
        }
      }
    }
    return true;
  }

  /** Drops a pet nothing holds any longer. */
  #release(held: HeldPet): void {
    if (held.byId || held.pages > 0) return;
    this.#pets.delete(held.stored.pet.id);
    this.#bytes -= held.bytes;
  }
}
