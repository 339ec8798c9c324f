// The request journal (GET /__admin/requests): every /v1 request, rejected ones too, with
// the whole exchange (journal-entry.ts), kept in a bounded ring so that a harness can check
// what its client sent and got. The ring holds at most `capacity` entries and at most
// `maxBytes` of them by estimate; the oldest go first, counted in `dropped`. Recording is
// O(1) plus the copy of the request's header list, and wakes the counts waiting for it
// (GET /__admin/requests/count?atLeast=N&timeoutMs=T): nothing polls.
import { ApiError } from '../core/index.js';
import { entryBytes, type JournalRecord } from './journal-entry.js';
import { matches, type JournalFilter } from './journal-filter.js';

/** The matching entries of one ring, oldest first, and what it dropped. */
export interface JournalSlice {
  readonly records: readonly JournalRecord[];
  readonly dropped: number;
}

/**
 * A ring as a whole, for the bound of several rings (workers) together: the time of every
 * entry it holds (oldest first), the position of each matching record among them, and the
 * time of the newest entry it evicted.
 */
export interface RingSlice extends JournalSlice {
  readonly times: readonly number[];
  /** For each of `records`, its position in `times`. */
  readonly positions: readonly number[];
  /** The `at` of the newest entry evicted since the last clear (-Infinity: none). */
  readonly evictedAt: number;
}

/** What a count that waited answers. */
export interface WaitedCount {
  count: number;
  met: boolean;
  waitedMs: number;
}

/** The most the ring holds, all entries together, by estimate (see entryBytes). */
export const JOURNAL_MAX_BYTES = 64 * 1024 * 1024;

/** A count waiting for more matching entries. */
interface Waiter {
  readonly filter: JournalFilter;
  readonly atLeast: number;
  /** Matching entries recorded so far (recounted exactly before it is believed). */
  seen: number;
  readonly done: (met: boolean) => void;
}

export class RequestJournal {
  readonly capacity: number;
  readonly maxBytes: number;
  #ring: Array<JournalRecord | undefined>;
  /** Index of the oldest entry. */
  #head = 0;
  #size = 0;
  #bytes = 0;
  #dropped = 0;
  readonly #waiters = new Set<Waiter>();
  /** Called on each recording of an entry that matches their filter (counts waiting in other workers). */
  readonly #watches = new Set<{ readonly filter: JournalFilter; readonly fn: () => void }>();
  #evictedAt = -Infinity;
  #stopped = false;

  /** @param capacity entries kept, 0 (records nothing) to any bound the config allows. */
  constructor(capacity: number, maxBytes = JOURNAL_MAX_BYTES) {
    this.capacity = capacity;
    this.maxBytes = maxBytes;
    // Grown as entries arrive, so a large capacity costs nothing until it is used.
    this.#ring = [];
  }

  get size(): number {
    return this.#size;
  }

  /** Estimated heap bytes of the entries held. */
  get bytes(): number {
    return this.#bytes;
  }

  /** Entries evicted since the last clear. */
  get dropped(): number {
    return this.#dropped;
  }

  record(r: JournalRecord): void {
    if (this.capacity === 0) return;
    const cost = entryBytes(r);
    while (this.#size > 0 && (this.#size >= this.capacity || this.#bytes + cost > this.maxBytes)) this.#evict();
    const slot = (this.#head + this.#size) % this.capacity;
    if (slot === this.#ring.length) this.#ring.push(r);
    else this.#ring[slot] = r;
    this.#size++;
    this.#bytes += cost;
    if (this.#waiters.size > 0) this.#wake(r);
    if (this.#watches.size > 0) for (const w of this.#watches) if (matches(r, w.filter)) w.fn();
  }

  /** Calls `fn` on each recording of an entry matching `filter`, until the function returned is called. */
  watch(filter: JournalFilter, fn: () => void): () => void {
    const w = { filter, fn };
    this.#watches.add(w);
    return () => this.#watches.delete(w);
  }

  #evict(): void {
    const old = this.#ring[this.#head] as JournalRecord;
    this.#ring[this.#head] = undefined;
    if (old.at > this.#evictedAt) this.#evictedAt = old.at;
    this.#bytes -= entryBytes(old);
    this.#head = (this.#head + 1) % this.capacity;
    this.#size--;
    this.#dropped++;
  }

  /** Empties the journal; dropped starts again from 0. Counts waiting go on, from nothing. */
  clear(): void {
    this.#ring = [];
    this.#head = 0;
    this.#size = 0;
    this.#bytes = 0;
    this.#dropped = 0;
    this.#evictedAt = -Infinity;
    for (const w of this.#waiters) w.seen = 0;
  }

  /** The entries matching the filter (all but since and limit, which apply after a merge), oldest first. */
  slice(filter: JournalFilter): JournalSlice {
    const records: JournalRecord[] = [];
    for (let i = 0; i < this.#size; i++) {
      const r = this.#ring[(this.#head + i) % this.capacity] as JournalRecord;
      if (matches(r, filter)) records.push(r);
    }
    return { records, dropped: this.#dropped };
  }

  /**
   * As slice(), with what the bound of several rings together needs (see RingSlice), of the
   * entries answered up to `before` (service clock ms).
   */
  ringSlice(filter: JournalFilter, before = Infinity): RingSlice {
    const records: JournalRecord[] = [];
    const positions: number[] = [];
    const times: number[] = [];
    for (let i = 0; i < this.#size; i++) {
      const r = this.#ring[(this.#head + i) % this.capacity] as JournalRecord;
      if (r.at > before) continue;
      times.push(r.at);
      if (matches(r, filter)) {
        records.push(r);
        positions.push(times.length - 1);
      }
    }
    return { records, dropped: this.#dropped, times, positions, evictedAt: this.#evictedAt };
  }

  /** How many entries match (since included), or the 400 of an unknown since. */
  count(filter: JournalFilter): number | ApiError {
    return countSlices([this.slice(filter)], filter);
  }

  /**
   * Resolves once at least `atLeast` entries match, or `timeoutMs` has passed, or the service
   * stops; woken by the recording of each matching entry. `monotonic`: the service clock's
   * interval reading (ms), for waitedMs.
   */
  async wait(filter: JournalFilter, atLeast: number, timeoutMs: number, monotonic: () => number): Promise<WaitedCount | ApiError> {
    const started = monotonic();
    const first = this.count(filter);
    if (first instanceof ApiError || first >= atLeast || timeoutMs === 0 || this.#stopped) {
      return first instanceof ApiError ? first : { count: first, met: first >= atLeast, waitedMs: 0 };
    }
    await new Promise<boolean>((resolve) => {
      const waiter: Waiter = {
        filter, atLeast, seen: first,
        done: (met) => {
          clearTimeout(timer);
          this.#waiters.delete(waiter);
          resolve(met);
        },
      };
      const timer = setTimeout(() => waiter.done(false), timeoutMs);
      this.#waiters.add(waiter);
    });
    const count = this.count(filter);
    if (count instanceof ApiError) return count;
    return { count, met: count >= atLeast, waitedMs: Math.round(monotonic() - started) };
  }

  #wake(r: JournalRecord): void {
    for (const w of this.#waiters) {
      if (!matches(r, w.filter) || ++w.seen < w.atLeast) continue;
      // Believed only when counted again: evictions (or a since) may have taken some away.
      const exact = this.count(w.filter);
      if (exact instanceof ApiError || exact >= w.atLeast) w.done(true);
      else w.seen = exact;
    }
  }

  /** The service is stopping: counts waiting are answered now, and later ones do not wait. */
  stop(): void {
    this.#stopped = true;
    for (const w of [...this.#waiters]) w.done(false);
  }
}

/**
 * The rings of several workers as one journal of `capacity` entries: the newest `capacity`
 * entries of them all (in the order mergeSlices sorts them), none older than an entry any of
 * them evicted; the others count as dropped. So the bound and "the oldest go first" hold for
 * the service as a whole, though each worker's ring holds up to `capacity` entries.
 */
export function boundRings(rings: readonly RingSlice[], capacity: number): JournalSlice[] {
  let evictedAt = -Infinity;
  let held = 0;
  let dropped = 0;
  for (const r of rings) {
    if (r.evictedAt > evictedAt) evictedAt = r.evictedAt;
    held += r.times.length;
    dropped += r.dropped;
  }
  // Every entry held, in merge order (time, then ring, then position): the newest `capacity`
  // of those not older than an evicted one are kept.
  const all: Array<[number, number, number]> = [];
  rings.forEach((r, ring) => r.times.forEach((at, position) => {
    if (at >= evictedAt) all.push([at, ring, position]);
  }));
  all.sort((a, b) => a[0] - b[0] || a[1] - b[1] || a[2] - b[2]);
  const kept = all.slice(Math.max(0, all.length - capacity));
  const keep = rings.map(() => new Set<number>());
  for (const [, ring, position] of kept) (keep[ring] as Set<number>).add(position);
  dropped += held - kept.length;
  return rings.map((r, ring) => {
    const mine = keep[ring] as Set<number>;
    const records = r.records.filter((_, k) => mine.has(r.positions[k] as number));
    // The whole service's dropped goes with the first slice (mergeSlices sums them).
    return { records, dropped: ring === 0 ? dropped : 0 };
  });
}

/**
 * The slices of several rings (workers) as one: in time order (ties in the order given), after
 * `since`, at most `limit`; dropped summed. An unknown `since` is an ApiError (400): the entry
 * was never recorded, or was evicted (see `dropped`).
 */
export function mergeSlices(slices: readonly JournalSlice[], filter: JournalFilter): { records: JournalRecord[]; dropped: number } | ApiError {
  let dropped = 0;
  let all: JournalRecord[];
  if (slices.length === 1) {
    const only = slices[0] as JournalSlice;
    all = only.records as JournalRecord[];
    dropped = only.dropped;
  } else {
    const tagged: Array<{ r: JournalRecord; source: number; index: number }> = [];
    slices.forEach((s, source) => {
      dropped += s.dropped;
      s.records.forEach((r, index) => tagged.push({ r, source, index }));
    });
    tagged.sort((a, b) => a.r.at - b.r.at || a.source - b.source || a.index - b.index);
    all = tagged.map((t) => t.r);
  }
  let start = 0;
  if (filter.since !== undefined) {
    let found = -1;
    for (let i = all.length - 1; i >= 0; i--) {
      if ((all[i] as JournalRecord).requestId === filter.since) {
        found = i;
        break;
      }
    }
    if (found < 0) {
      return new ApiError('invalid_request', `since: no request with id ${JSON.stringify(filter.since)} among the entries kept that match the other filters (never recorded, or evicted: ${dropped} dropped since the last clear).`);
    }
    start = found + 1;
  }
  return { records: all.slice(start, start + filter.limit), dropped };
}

/** How many entries match, after `since` (no limit). */
export function countSlices(slices: readonly JournalSlice[], filter: JournalFilter): number | ApiError {
  const merged = mergeSlices(slices, { ...filter, limit: Number.MAX_SAFE_INTEGER });
  return merged instanceof ApiError ? merged : merged.records.length;
}
