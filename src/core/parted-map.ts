// A Map in parts of at most PART_ENTRIES entries, so that none of them is ever rehashed in
// one large step. A V8 Map doubles its table when it fills, rehashing every entry at once:
// about 4 ms of CPU past 65,536 entries, 10 to 14 ms past 131,072 on this project's test
// machine, one block of the event loop each time (a snapshot's restore builds tables of
// 100,000 entries). Parts of at most 32,768 entries make the largest rehash that of 16,384
// entries, about 0.6 ms.

/** Entries a part holds at most (see the header). */
export const PART_ENTRIES = 1 << 15;

interface Part<K, V> {
  readonly map: Map<K, V>;
  /** The next part in order; kept on a part that was dropped, so that a walk on it goes on. */
  next: Part<K, V> | undefined;
}

/**
 * A Map<K, V> whose values are never undefined, made of parts. `ordered`: entries are walked
 * in the order they were added (a new entry always goes to the last part, a new part when it
 * is full), as a Map's are; otherwise a new entry goes to the first part with room, and the
 * walk order is no order. A part left empty is dropped (the last one is kept). A lookup
 * tries each part: a handful at a hundred thousand entries.
 *
 * A walk (entries(), for-of) behaves as a Map's: it sees entries added after it began (at
 * the end, when ordered) and skips entries deleted before it reaches them.
 */
export class PartedMap<K, V> {
  readonly #ordered: boolean;
  #head: Part<K, V>;
  #tail: Part<K, V>;
  #size = 0;

  constructor(ordered: boolean) {
    this.#ordered = ordered;
    this.#head = this.#tail = { map: new Map(), next: undefined };
  }

  get size(): number {
    return this.#size;
  }

  /** How many parts it has now (tests). */
  get parts(): number {
    let n = 0;
    for (let p: Part<K, V> | undefined = this.#head; p !== undefined; p = p.next) n++;
    return n;
  }

  get(key: K): V | undefined {
    for (let p: Part<K, V> | undefined = this.#head; p !== undefined; p = p.next) {
      const value = p.map.get(key);
      if (value !== undefined) return value;
    }
    return undefined;
  }

  has(key: K): boolean {
    return this.get(key) !== undefined;
  }

  /** Adds `key`, which the caller knows is not in it (a key already in it would be held twice). */
  add(key: K, value: V): void {
    let part: Part<K, V> | undefined = this.#ordered ? this.#tail : this.#head;
    if (!this.#ordered) {
      while (part !== undefined && part.map.size >= PART_ENTRIES) part = part.next;
    }
    if (part === undefined || part.map.size >= PART_ENTRIES) {
      part = { map: new Map(), next: undefined };
      this.#tail.next = part;
      this.#tail = part;
    }
    part.map.set(key, value);
    this.#size++;
  }

  delete(key: K): boolean {
    let before: Part<K, V> | undefined;
    for (let p: Part<K, V> | undefined = this.#head; p !== undefined; before = p, p = p.next) {
      if (!p.map.delete(key)) continue;
      this.#size--;
      if (p.map.size === 0 && p !== this.#tail) {
        // Dropped from the list; p.next stays, so a walk standing on p goes on from there.
        if (before === undefined) this.#head = p.next as Part<K, V>;
        else before.next = p.next;
      }
      return true;
    }
    return false;
  }

  /** The entries, part after part (see the class). The parts are those from the call on. */
  entries(): IterableIterator<[K, V]> {
    return walk(this.#head);
  }

  [Symbol.iterator](): IterableIterator<[K, V]> {
    return walk(this.#head);
  }
}

function* walk<K, V>(from: Part<K, V>): IterableIterator<[K, V]> {
  for (let p: Part<K, V> | undefined = from; p !== undefined; p = p.next) yield* p.map;
}
