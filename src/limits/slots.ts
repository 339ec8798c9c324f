// The in-memory limiter's storage: one id's state in a slot of typed arrays, indexed by a Map,
// the slots in a least-recently-used list bounded by maxEntries, and the copy-on-write hooks of
// a snapshot export under way (snapshot-export.ts walks the list; memory.ts is the bucket rule
// on a slot).
import { PartedMap, type Limits } from '../core/index.js';
import { DAY_MS, MINUTE_MS, msUntilToken } from './buckets.js';
import { SNAPSHOT_FIELDS, SnapshotField as F } from './state.js';

/**
 * Where one id's state lives: a slot of the table's typed arrays, NUMBERS numbers in `num`
 * and LINKS integers in `link` from slot * NUMBERS and slot * LINKS. An object per id (as
 * this once was) made a restore of a hundred thousand ids a hundred thousand small objects
 * that all survive, and each young-generation collection then copied a semi-space full of
 * them: pauses of 20 ms and more. Typed arrays that large live outside the young generation
 * and are never copied by it; the ids are the strings the caller gave (shared, not copied).
 */
export const N_MINUTE = 0;
export const N_DAY = 1;
/** monotonic() at the last refill. */
export const N_AT = 2;
/** Limits of the last refill (the rate a snapshot is saved with). */
export const N_PER_MINUTE = 3;
export const N_PER_DAY = 4;
/** Consecutive refusals; reset on admission and when a ban starts. */
export const N_STRIKES = 5;
/** monotonic() at which the ban ends; 0 or past when not banned. */
export const N_BANNED_UNTIL = 6;
/** When it was added (MemoryLimiter's #added): an export takes the slots added before it. */
export const N_BORN = 7;
export const NUMBERS = 8;
/** Neighbours in the LRU list (prev is older), NONE at its ends; a free slot's next is the next free one. */
export const L_PREV = 0;
export const L_NEXT = 1;
/**
 * Bookkeeping of the export under way (exportSnapshot), by its number: `passed`, the export
 * has written this slot; `copied`, its state as of the export was copied before a change
 * (and sits in its `before` copies, last); `moved`, it left its place in the list since the
 * export began (touched or removed).
 */
export const L_PASSED = 2;
export const L_COPIED = 3;
export const L_MOVED = 4;
export const LINKS = 5;
export const NONE = -1;
export const EMPTY_NUMBERS = new Float64Array(0);
/** Slots a new table has room for before it grows. */
export const INITIAL_SLOTS = 64;

/**
 * The ids of a limiter and their state. Slot 0 is a scratch slot, in no list, that peek()
 * fills for an id it does not know, so that peeking allocates nothing. The slots of the ids
 * form a doubly linked list in least-recently-used order: evicting from a Map by
 * `keys().next()` is O(holes) in V8 once many deletions accumulate at its front.
 */
export class Table {
  /** id -> its slot, in parts: no large rehash in one step (a restore builds 100,000 entries). */
  readonly index = new PartedMap<string, number>(false);
  /** Slot -> its id ('' when free). */
  readonly ids: string[] = [''];
  num: Float64Array;
  link: Int32Array;
  /** Slots handed out so far (the scratch slot included). */
  used = 1;
  /** The first free slot (their list runs through L_NEXT). */
  free = NONE;
  oldest = NONE;
  youngest = NONE;
  /**
   * Copies of entries that stood just before a slot when the export under way began and left
   * their place since, to be written before it (rare: only while an export runs).
   */
  readonly before = new Map<number, Copies>();

  constructor(slots: number) {
    this.num = new Float64Array(slots * NUMBERS);
    this.link = new Int32Array(slots * LINKS);
  }

  /** A slot for `id`, linked nowhere and with its export marks cleared; the caller fills it. */
  take(id: string): number {
    let slot = this.free;
    if (slot !== NONE) {
      this.free = this.link[slot * LINKS + L_NEXT] as number;
      this.ids[slot] = id;
    } else {
      slot = this.used++;
      if (slot * NUMBERS >= this.num.length) this.#grow();
      this.ids.push(id);
    }
    const l = slot * LINKS;
    this.link[l + L_PASSED] = 0;
    this.link[l + L_COPIED] = 0;
    this.link[l + L_MOVED] = 0;
    this.index.add(id, slot);
    return slot;
  }

  /** Forgets the id of `slot` (already unlinked) and makes the slot free. */
  release(slot: number): void {
    this.index.delete(this.ids[slot] as string);
    this.ids[slot] = '';
    this.link[slot * LINKS + L_NEXT] = this.free;
    this.free = slot;
  }

  #grow(): void {
    const slots = (this.num.length / NUMBERS) * 2;
    const num = new Float64Array(slots * NUMBERS);
    num.set(this.num);
    const link = new Int32Array(slots * LINKS);
    link.set(this.link);
    this.num = num;
    this.link = link;
  }
}

/** An export under way: its number, its moment, and what it is filling. */
export interface ExportSession {
  readonly id: number;
  /** The table it walks: a reset or an import replaces the limiter's, and leaves this one be. */
  readonly t: Table;
  /** Slots with a higher `born` were added since it began: not part of it. */
  readonly added: number;
  readonly mono: number;
  /** Allocated after the export's first turn of the event loop (see exportSnapshot). */
  ids: string[];
  numbers: Float64Array;
  /** Entries written so far. */
  written: number;
  /** The next slot to write, in the list as it was when the export began (NONE at its end). */
  cursor: number;
  /** Copies of entries that left the end of the list's old part: written last. */
  tail: Copies | undefined;
}

/** An entry's state as of an export, copied before it changed or left its place. */
export interface EntryCopy {
  readonly id: string;
  readonly numbers: Float64Array;
  next: EntryCopy | undefined;
}

/** Copies in the order to write them, a linked list (so that prepending a run is O(1)). */
export interface Copies {
  head: EntryCopy;
  last: EntryCopy;
}

/** `run` followed by `list`, reusing both (`run` must not be used after). */
function prepend(run: Copies, list: Copies | undefined): Copies {
  if (list === undefined) return run;
  run.last.next = list.head;
  return { head: run.head, last: list.last };
}

/** The SNAPSHOT_FIELDS numbers of the slot at `o` (slot * NUMBERS) of `num` at `mono`, written into `n` from `at`. */
export function writeNumbers(n: Float64Array, at: number, num: Float64Array, o: number, mono: number): void {
  n[at + F.perMinute] = num[o + N_PER_MINUTE] as number;
  n[at + F.perDay] = num[o + N_PER_DAY] as number;
  n[at + F.minute] = num[o + N_MINUTE] as number;
  n[at + F.day] = num[o + N_DAY] as number;
  n[at + F.ageMs] = mono - (num[o + N_AT] as number);
  n[at + F.strikes] = num[o + N_STRIKES] as number;
  const bannedUntil = num[o + N_BANNED_UNTIL] as number;
  n[at + F.banLeftMs] = bannedUntil > mono ? bannedUntil - mono : 0;
}

/** Appends the live state of `slot` to the export's output. */
export function writeLive(x: ExportSession, slot: number): void {
  const i = x.written++;
  x.ids[i] = x.t.ids[slot] as string;
  writeNumbers(x.numbers, i * SNAPSHOT_FIELDS, x.t.num, slot * NUMBERS, x.mono);
}

/** Appends copies to the export's output. */
export function writeCopies(x: ExportSession, copies: Copies | undefined): void {
  for (let c = copies?.head; c !== undefined; c = c.next) {
    const i = x.written++;
    x.ids[i] = c.id;
    x.numbers.set(c.numbers, i * SNAPSHOT_FIELDS);
  }
}

function copyOf(t: Table, slot: number, mono: number): EntryCopy {
  const numbers = new Float64Array(SNAPSHOT_FIELDS);
  writeNumbers(numbers, 0, t.num, slot * NUMBERS, mono);
  return { id: t.ids[slot] as string, numbers, next: undefined };
}

/**
 * Refills both buckets of the slot at `o` up to `mono` at the rates of `limits`, clamped to
 * their capacities: buckets.ts refill(), on a slot. A time before the slot's last refill (a
 * clock stepped back) refills nothing and moves a running ban back with it, so that it keeps
 * what it had left then (the Redis script does the same).
 */
export function refillSlot(num: Float64Array, o: number, limits: Limits, mono: number): void {
  const at = num[o + N_AT] as number;
  let elapsed = 0;
  if (mono > at) elapsed = mono - at;
  else if (mono < at) num[o + N_BANNED_UNTIL] = (num[o + N_BANNED_UNTIL] as number) - (at - mono);
  const minuteCap = limits.perMinute * MINUTE_MS;
  const dayCap = limits.perDay * DAY_MS;
  // Clamp even when elapsed is 0: the limits may have shrunk since the last call.
  num[o + N_MINUTE] = Math.min(minuteCap, (num[o + N_MINUTE] as number) + elapsed * limits.perMinute);
  num[o + N_DAY] = Math.min(dayCap, (num[o + N_DAY] as number) + elapsed * limits.perDay);
  num[o + N_AT] = mono;
  num[o + N_PER_MINUTE] = limits.perMinute;
  num[o + N_PER_DAY] = limits.perDay;
}

/** ms until both buckets of the slot at `o` hold a whole token: buckets.ts msUntilAdmitted(). */
export function msUntilAdmittedSlot(num: Float64Array, o: number, limits: Limits): number {
  return Math.max(
    msUntilToken(num[o + N_MINUTE] as number, MINUTE_MS, limits.perMinute),
    msUntilToken(num[o + N_DAY] as number, DAY_MS, limits.perDay),
  );
}


/**
 * The ids of a limiter in their slots, bounded by least-recent use, with the copy-on-write
 * bookkeeping of the snapshot export under way (snapshot-export.ts walks them).
 */
export class Slots {
  /** The ids and their state; replaced whole by a reset or an import. */
  t = new Table(INITIAL_SLOTS);
  /** The export under way, whose entries are copied before they change. */
  export: ExportSession | undefined = undefined;
  /** Numbers the exports. */
  exports = 0;
  /** Entries added so far (each slot's N_BORN). */
  added = 0;
  maxEntries = Infinity;

  get size(): number {
    return this.t.index.size;
  }

  /** A new bound: a smaller one evicts the least recently used ids at once. */
  bound(maxEntries: number | undefined): void {
    this.maxEntries = maxEntries ?? Infinity;
    const t = this.t;
    while (t.index.size > this.maxEntries && t.oldest !== NONE) this.remove(t.oldest);
  }

  /**
   * Finds or creates the slot of `id` and marks it most recently used; a new one starts with
   * full buckets, or empty ones with `startEmpty`.
   */
  touch(id: string, limits: Limits, mono: number, startEmpty: boolean): number {
    const t = this.t;
    const slot = t.index.get(id);
    if (slot === undefined) {
      const created = this.insert(id, limits, mono);
      const num = t.num;
      const o = created * NUMBERS;
      num[o + N_MINUTE] = startEmpty ? 0 : limits.perMinute * MINUTE_MS;
      num[o + N_DAY] = startEmpty ? 0 : limits.perDay * DAY_MS;
      return created;
    }
    if (slot !== t.youngest) {
      this.unlink(slot);
      appendSlot(t, slot);
    }
    return slot;
  }

  /**
   * Adds `id` as the youngest, its limits `limits` and its time `mono` (buckets empty, no
   * refusal, no ban: the caller fills them), evicting the oldest beyond maxEntries.
   */
  insert(id: string, limits: Limits, mono: number): number {
    const t = this.t;
    const slot = t.take(id);
    const num = t.num;
    const o = slot * NUMBERS;
    num[o + N_MINUTE] = 0;
    num[o + N_DAY] = 0;
    num[o + N_AT] = mono;
    num[o + N_PER_MINUTE] = limits.perMinute;
    num[o + N_PER_DAY] = limits.perDay;
    num[o + N_STRIKES] = 0;
    num[o + N_BANNED_UNTIL] = 0;
    num[o + N_BORN] = ++this.added;
    appendSlot(t, slot);
    while (t.index.size > this.maxEntries && t.oldest !== NONE) this.remove(t.oldest);
    return slot;
  }

  remove(slot: number): void {
    this.unlink(slot);
    this.t.release(slot);
  }

  /** Drops the state of every id not in `ids`. */
  retain(ids: ReadonlySet<string>): void {
    for (const [id, slot] of this.t.index) {
      if (!ids.has(id)) this.remove(slot);
    }
  }

  reset(): void {
    this.t = new Table(INITIAL_SLOTS);
  }

  unlink(slot: number): void {
    if (this.export !== undefined) this.beforeUnlink(slot);
    unlinkSlot(this.t, slot);
  }

  /** `slot` is about to change: if the export under way has not written it, keeps its state as it was. */
  beforeChange(slot: number): void {
    const x = this.export as ExportSession;
    const t = this.t;
    if (x.t !== t) return; // the table it walks is no longer in use: nothing in it changes
    const l = slot * LINKS;
    const link = t.link;
    if ((t.num[slot * NUMBERS + N_BORN] as number) > x.added || link[l + L_PASSED] === x.id || link[l + L_COPIED] === x.id || link[l + L_MOVED] === x.id) return;
    link[l + L_COPIED] = x.id;
    const copy = copyOf(t, slot, x.mono);
    // Its own copy goes after those of the entries before it.
    const before = t.before.get(slot);
    if (before === undefined) t.before.set(slot, { head: copy, last: copy });
    else {
      before.last.next = copy;
      before.last = copy;
    }
  }

  /**
   * `slot` is about to leave its place in the list (moved to the young end, or removed): if
   * the export under way has not written it, its copy (and the copies waiting before it) move
   * to the slot after it in the list's old part, or to the end of the export.
   */
  beforeUnlink(slot: number): void {
    const x = this.export as ExportSession;
    const t = this.t;
    if (x.t !== t) return;
    const link = t.link;
    const l = slot * LINKS;
    if ((t.num[slot * NUMBERS + N_BORN] as number) > x.added || link[l + L_PASSED] === x.id || link[l + L_MOVED] === x.id) return;
    this.beforeChange(slot);
    link[l + L_MOVED] = x.id;
    const copies = t.before.get(slot) as Copies;
    t.before.delete(slot);
    const next = link[l + L_NEXT] as number;
    if (x.cursor === slot) x.cursor = next;
    // Before whatever is left after it: the next entry of the old part, or else the copies
    // of the old part's end already taken (they stood after it).
    if (next !== NONE && (t.num[next * NUMBERS + N_BORN] as number) <= x.added && link[next * LINKS + L_MOVED] !== x.id) {
      t.before.set(next, prepend(copies, t.before.get(next)));
    } else x.tail = prepend(copies, x.tail);
  }
}

/** Links `slot` in as the youngest. */
export function appendSlot(t: Table, slot: number): void {
  const link = t.link;
  const l = slot * LINKS;
  link[l + L_PREV] = t.youngest;
  link[l + L_NEXT] = NONE;
  if (t.youngest === NONE) t.oldest = slot;
  else link[t.youngest * LINKS + L_NEXT] = slot;
  t.youngest = slot;
}

/** Takes `slot` out of the LRU list. */
export function unlinkSlot(t: Table, slot: number): void {
  const link = t.link;
  const l = slot * LINKS;
  const prev = link[l + L_PREV] as number;
  const next = link[l + L_NEXT] as number;
  if (prev === NONE) t.oldest = next;
  else link[prev * LINKS + L_NEXT] = next;
  if (next === NONE) t.youngest = prev;
  else link[next * LINKS + L_PREV] = prev;
  link[l + L_PREV] = NONE;
  link[l + L_NEXT] = NONE;
}
