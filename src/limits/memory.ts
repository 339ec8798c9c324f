// The in-memory limiter: per id, two token buckets (minute and day) plus a temporary ban for
// clients that keep sending after a 429 (docs/rate-limits.md), in slots of typed arrays
// indexed by a Map, bounded by least-recent use. Its state can be saved and restored (persist(): state.ts), so that day
// buckets and bans of keys survive a restart.
import { PartedMap, Steps, step, yieldToLoop, type Clock, type Limits } from '../core/index.js';
import { DAY_MS, MINUTE_MS, checkConfiguration, checkLimits, msUntilToken } from './buckets.js';
import type { BanPolicy, LimitOutcome, LimitResult, Limiter } from './contract.js';
import { PolicyCache, limitResult } from './headers.js';
import type { PolicyStrings } from './headers.js';
import { LIMITER_STATE_VERSION, SNAPSHOT_FIELDS, SnapshotField as F, loadLimiterState, startLimiterPersistence } from './state.js';
import type { LimiterPersistence, LimiterPersistenceOptions, LimiterSnapshot, LimiterState, LimiterStateEntry } from './state.js';

/**
 * Entries copied (or built) between two turns of the event loop by a snapshot's export and
 * import, at most: well under a millisecond of work each once the code is compiled
 * (docs/harness.md, snapshots). A step also ends once it has run STEP_MS: the first steps
 * run before V8 has compiled the loop, several times slower.
 */
export const SNAPSHOT_CHUNK = 4096;

/**
 * Where one id's state lives: a slot of the table's typed arrays, NUMBERS numbers in `num`
 * and LINKS integers in `link` from slot * NUMBERS and slot * LINKS. An object per id (as
 * this once was) made a restore of a hundred thousand ids a hundred thousand small objects
 * that all survive, and each young-generation collection then copied a semi-space full of
 * them: pauses of 20 ms and more. Typed arrays that large live outside the young generation
 * and are never copied by it; the ids are the strings the caller gave (shared, not copied).
 */
const N_MINUTE = 0;
const N_DAY = 1;
/** monotonic() at the last refill. */
const N_AT = 2;
/** Limits of the last refill (the rate a snapshot is saved with). */
const N_PER_MINUTE = 3;
const N_PER_DAY = 4;
/** Consecutive refusals; reset on admission and when a ban starts. */
const N_STRIKES = 5;
/** monotonic() at which the ban ends; 0 or past when not banned. */
const N_BANNED_UNTIL = 6;
/** When it was added (MemoryLimiter's #added): an export takes the slots added before it. */
const N_BORN = 7;
const NUMBERS = 8;
/** Neighbours in the LRU list (prev is older), NONE at its ends; a free slot's next is the next free one. */
const L_PREV = 0;
const L_NEXT = 1;
/**
 * Bookkeeping of the export under way (exportSnapshot), by its number: `passed`, the export
 * has written this slot; `copied`, its state as of the export was copied before a change
 * (and sits in its `before` copies, last); `moved`, it left its place in the list since the
 * export began (touched or removed).
 */
const L_PASSED = 2;
const L_COPIED = 3;
const L_MOVED = 4;
const LINKS = 5;
const NONE = -1;
const EMPTY_NUMBERS = new Float64Array(0);
/** Slots a new table has room for before it grows. */
const INITIAL_SLOTS = 64;

/**
 * The ids of a limiter and their state. Slot 0 is a scratch slot, in no list, that peek()
 * fills for an id it does not know, so that peeking allocates nothing. The slots of the ids
 * form a doubly linked list in least-recently-used order: evicting from a Map by
 * `keys().next()` is O(holes) in V8 once many deletions accumulate at its front.
 */
class Table {
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
interface ExportSession {
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
interface EntryCopy {
  readonly id: string;
  readonly numbers: Float64Array;
  next: EntryCopy | undefined;
}

/** Copies in the order to write them, a linked list (so that prepending a run is O(1)). */
interface Copies {
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
function writeNumbers(n: Float64Array, at: number, num: Float64Array, o: number, mono: number): void {
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
function writeLive(x: ExportSession, slot: number): void {
  const i = x.written++;
  x.ids[i] = x.t.ids[slot] as string;
  writeNumbers(x.numbers, i * SNAPSHOT_FIELDS, x.t.num, slot * NUMBERS, x.mono);
}

/** Appends copies to the export's output. */
function writeCopies(x: ExportSession, copies: Copies | undefined): void {
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
function refillSlot(num: Float64Array, o: number, limits: Limits, mono: number): void {
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
function msUntilAdmittedSlot(num: Float64Array, o: number, limits: Limits): number {
  return Math.max(
    msUntilToken(num[o + N_MINUTE] as number, MINUTE_MS, limits.perMinute),
    msUntilToken(num[o + N_DAY] as number, DAY_MS, limits.perDay),
  );
}

export interface LimiterOptions {
  clock: Clock;
  ban: BanPolicy;
  /** Default unbounded; when set, least-recently-used ids are evicted beyond it. */
  maxEntries?: number;
  /**
   * New ids start with both buckets empty instead of full (default false): the Redis
   * limiter's fallback, which must not hand out a fresh budget to an id it knows nothing of.
   */
  startEmpty?: boolean;
}

/** One id's state as another limiter reports it (put()): tokens, strikes, ban time left. */
export interface KnownState {
  /** Tokens in token-milliseconds of window (buckets.ts). */
  readonly minute: number;
  readonly day: number;
  readonly strikes: number;
  /** ms of ban left, 0 when not banned. */
  readonly banMs: number;
}

export class MemoryLimiter implements Limiter {
  readonly #clock: Clock;
  #banAfter = 0;
  #banMs = 0;
  #maxEntries = Infinity;
  readonly #startEmpty: boolean;
  /** The ids and their state; replaced whole by a reset or an import. */
  #t = new Table(INITIAL_SLOTS);
  /** The export under way (exportSnapshot), whose entries are copied before they change. */
  #export: ExportSession | undefined = undefined;
  /** Numbers the exports. */
  #exports = 0;
  /** Entries added so far (each slot's N_BORN). */
  #added = 0;
  /**
   * How far this limiter's time runs behind the clock's monotonic time: 0 until a snapshot is
   * imported, which sets it so that the time the import took (building in chunks, the store
   * writing to disk) does not count: every id is exactly as saved at the swap.
   */
  #shift = 0;
  readonly #policies = new PolicyCache();
  /** Saves the state of the key limiter across restarts (see persist()); else undefined. */
  #persistence: LimiterPersistence | undefined = undefined;

  constructor(opts: LimiterOptions) {
    this.#clock = opts.clock;
    this.#startEmpty = opts.startEmpty ?? false;
    this.configure(opts.ban, opts.maxEntries);
  }

  /**
   * Changes the ban policy and the size bound (a config reload). Bans already running keep
   * their end; a smaller bound evicts the least recently used ids at once.
   */
  configure(ban: BanPolicy, maxEntries?: number): void {
    checkConfiguration(ban, maxEntries);
    this.#banAfter = ban.after;
    this.#banMs = ban.seconds * 1000;
    this.#maxEntries = maxEntries ?? Infinity;
    const t = this.#t;
    while (t.index.size > this.#maxEntries && t.oldest !== NONE) this.#remove(t.oldest);
  }

  get size(): number {
    return this.#t.index.size;
  }

  /** Charges one request to `id` (or refuses it) and returns the outcome and headers. */
  take(id: string, limits: Limits, now?: number): LimitResult {
    const strings = this.#policies.get(limits);
    const mono = (now ?? this.#clock.monotonic()) - this.#shift;
    const slot = this.#touch(id, limits, mono);
    if (this.#export !== undefined) this.#beforeChange(slot);
    const num = this.#t.num;
    const o = slot * NUMBERS;
    refillSlot(num, o, limits, mono);

    if ((num[o + N_BANNED_UNTIL] as number) > mono) {
      // A ban is not extended by requests made during it, and charges nothing.
      return this.#banned(num, o, limits, strings, mono);
    }
    if (msUntilAdmittedSlot(num, o, limits) === 0) {
      // Never below 0 (SLACK_MS may admit a hair early), so snapshots stay well-formed.
      const minute = Math.max(0, (num[o + N_MINUTE] as number) - MINUTE_MS);
      const day = Math.max(0, (num[o + N_DAY] as number) - DAY_MS);
      num[o + N_MINUTE] = minute;
      num[o + N_DAY] = day;
      num[o + N_STRIKES] = 0;
      return limitResult('ok', minute, day, limits, strings, 0, this.#clock.now());
    }
    return this.#refuse(num, o, limits, strings, mono);
  }

  /** Headers for the current state of `id` without charging it or counting a refusal. */
  peek(id: string, limits: Limits): LimitResult {
    const strings = this.#policies.get(limits);
    const mono = this.#clock.monotonic() - this.#shift;
    const t = this.#t;
    const num = t.num;
    let slot = t.index.get(id);
    if (slot === undefined) {
      // The scratch slot, as a fresh id would start.
      slot = 0;
      num[N_MINUTE] = limits.perMinute * MINUTE_MS;
      num[N_DAY] = limits.perDay * DAY_MS;
      num[N_AT] = mono;
      num[N_STRIKES] = 0;
      num[N_BANNED_UNTIL] = 0;
    } else if (this.#export !== undefined) {
      this.#beforeChange(slot);
    }
    const o = slot * NUMBERS;
    refillSlot(num, o, limits, mono);
    if ((num[o + N_BANNED_UNTIL] as number) > mono) return this.#banned(num, o, limits, strings, mono);
    const wait = msUntilAdmittedSlot(num, o, limits);
    return this.#result(wait === 0 ? 'ok' : 'rate_limited', num, o, limits, strings, wait);
  }

  /** Sets the state of `id` as of now (what Redis last said of it), marking it most recently used. */
  put(id: string, limits: Limits, known: KnownState): void {
    const mono = this.#clock.monotonic() - this.#shift;
    const slot = this.#touch(id, limits, mono);
    if (this.#export !== undefined) this.#beforeChange(slot);
    const num = this.#t.num;
    const o = slot * NUMBERS;
    num[o + N_MINUTE] = Math.min(limits.perMinute * MINUTE_MS, Math.max(0, known.minute));
    num[o + N_DAY] = Math.min(limits.perDay * DAY_MS, Math.max(0, known.day));
    num[o + N_AT] = mono;
    num[o + N_PER_MINUTE] = limits.perMinute;
    num[o + N_PER_DAY] = limits.perDay;
    num[o + N_STRIKES] = known.strikes;
    num[o + N_BANNED_UNTIL] = known.banMs > 0 ? mono + known.banMs : 0;
  }

  /** Drops the state of every id not in `ids` (e.g. keys revoked by a config reload). */
  retain(ids: ReadonlySet<string>): void {
    for (const [id, slot] of this.#t.index) {
      if (!ids.has(id)) this.#remove(slot);
    }
  }

  /**
   * Restores the state saved in `file`, if there is one, and from now on saves it there every
   * opts.intervalMs, at flush() and at close(): day buckets and bans survive a restart.
   */
  async persist(file: string, opts: LimiterPersistenceOptions): Promise<void> {
    const saved = await loadLimiterState(file);
    if (saved) this.restore(saved);
    this.#persistence = startLimiterPersistence(this, file, opts);
  }

  /** Saves now (after any save in flight) when persisting; rejects if the save fails. */
  flush(): Promise<void> {
    return this.#persistence?.flush() ?? Promise.resolve();
  }

  /** Stops the periodic save and saves once more; rejects if that last save fails. */
  close(): Promise<void> {
    return this.#persistence?.stop() ?? Promise.resolve();
  }

  /** Forgets every id: buckets, refusal counts and bans. */
  reset(): void {
    this.#t = new Table(INITIAL_SLOTS);
  }

  /**
   * Snapshot for persistence. Ids whose state equals a fresh id's (both buckets full, no
   * refusal, no ban) are left out: restoring them would change nothing.
   */
  toState(): LimiterState {
    const mono = this.#clock.monotonic() - this.#shift;
    const entries: LimiterStateEntry[] = [];
    const t = this.#t;
    for (let slot = t.oldest; slot !== NONE; slot = t.link[slot * LINKS + L_NEXT] as number) {
      if (this.#export !== undefined) this.#beforeChange(slot);
      const num = t.num;
      const o = slot * NUMBERS;
      const perMinute = num[o + N_PER_MINUTE] as number;
      const perDay = num[o + N_PER_DAY] as number;
      refillSlot(num, o, { perMinute, perDay }, mono);
      const minute = num[o + N_MINUTE] as number;
      const day = num[o + N_DAY] as number;
      const strikes = num[o + N_STRIKES] as number;
      const bannedUntil = num[o + N_BANNED_UNTIL] as number;
      const banMs = bannedUntil > mono ? bannedUntil - mono : 0;
      const full = minute >= perMinute * MINUTE_MS && day >= perDay * DAY_MS;
      if (full && strikes === 0 && banMs === 0) continue;
      entries.push({
        id: t.ids[slot] as string,
        perMinute,
        perDay,
        minute: minute / MINUTE_MS,
        day: day / DAY_MS,
        strikes,
        banMs,
      });
    }
    return { version: LIMITER_STATE_VERSION, savedAt: this.#clock.now(), entries };
  }

  /**
   * Replaces the current state by a snapshot. Monotonic time does not survive a restart, so
   * the downtime is measured on the wall clock, clamped at 0: a clock that went back refills
   * nothing (the conservative choice), and bans keep at least their saved remaining time.
   */
  restore(state: LimiterState): void {
    if (state.version !== LIMITER_STATE_VERSION) {
      throw new Error(`unsupported limiter state version ${String(state.version)}`);
    }
    const wallNow = this.#clock.now();
    const downtime = wallNow > state.savedAt ? wallNow - state.savedAt : 0;
    const mono = this.#clock.monotonic() - this.#shift;
    // Validate everything before forgetting the current state: all or nothing.
    for (const s of state.entries) checkLimits(s);
    this.reset();
    const t = this.#t;
    for (const s of state.entries) {
      const dup = t.index.get(s.id);
      if (dup !== undefined) this.#remove(dup);
      const slot = this.#insert(s.id, s, mono);
      const num = t.num;
      const o = slot * NUMBERS;
      num[o + N_MINUTE] = Math.max(0, s.minute) * MINUTE_MS;
      num[o + N_DAY] = Math.max(0, s.day) * DAY_MS;
      num[o + N_AT] = mono - downtime; // refillSlot() below credits the downtime at the saved rates
      refillSlot(num, o, s, mono);
      num[o + N_STRIKES] = Math.max(0, Math.floor(s.strikes));
      const banLeft = s.banMs - downtime;
      num[o + N_BANNED_UNTIL] = banLeft > 0 ? mono + banLeft : 0;
    }
  }

  /**
   * The exact state of every id, oldest first (see LimiterSnapshot), as it is at the call,
   * written in chunks of SNAPSHOT_CHUNK entries with a turn of the event loop between them;
   * nothing is walked or copied at the call itself. Requests go on meanwhile, and what they
   * do does not show in it (copy on write): an entry about to change, or to leave its place
   * in the list (touched, evicted, dropped), is copied first, as it was, and its copy is
   * written where it stood; entries added meanwhile are left out. One export at a time.
   */
  async exportSnapshot(): Promise<LimiterSnapshot> {
    if (this.#export !== undefined) throw new Error('a limiter snapshot is already being taken');
    const t = this.#t;
    const count = t.index.size;
    const x: ExportSession = {
      id: ++this.#exports,
      t,
      added: this.#added,
      mono: this.#clock.monotonic() - this.#shift,
      ids: [],
      numbers: EMPTY_NUMBERS,
      written: 0,
      cursor: t.oldest,
      tail: undefined,
    };
    this.#export = x;
    try {
      // Nothing more at the call: the save takes every part in one step, whose block is the
      // sum of what each part does at its call. The output (a megabyte or more at a hundred
      // thousand ids) is allocated in a step of its own; until then, what requests change is
      // kept aside by copy on write as at any other point of the export.
      await yieldToLoop();
      x.ids = new Array<string>(count);
      x.numbers = new Float64Array(count * SNAPSHOT_FIELDS);
      await yieldToLoop();
      const steps = new Steps(SNAPSHOT_CHUNK);
      for (;;) {
        const slot = x.cursor;
        // The list's old part ends where the entries added or moved since begin.
        if (slot === NONE) break;
        const l = slot * LINKS;
        if ((t.num[slot * NUMBERS + N_BORN] as number) > x.added || t.link[l + L_MOVED] === x.id) break;
        const before = t.before.get(slot);
        if (before !== undefined) {
          writeCopies(x, before);
          t.before.delete(slot);
        }
        if (t.link[l + L_COPIED] !== x.id) writeLive(x, slot);
        t.link[l + L_PASSED] = x.id;
        x.cursor = t.link[l + L_NEXT] as number;
        const pause = steps.next();
        if (pause !== undefined) await pause;
      }
      writeCopies(x, x.tail);
      if (x.written !== count) throw new Error(`limiter snapshot: ${x.written} entries written, ${count} expected`);
      return { ids: x.ids, numbers: x.numbers };
    } finally {
      this.#export = undefined;
      t.before.clear();
    }
  }

  /**
   * Builds the state of a snapshot aside, in chunks that give the event loop a turn in
   * between (requests meanwhile see the state as it is), and returns the step that swaps it
   * in at once. `mono`: the clock's monotonic time the entries are built for (default now;
   * a restore that also puts back a clock offset passes the time that offset gives). At the
   * swap each id is exactly as it was when saved: the time until the swap does not count.
   * It allocates no object per id: typed arrays sized once, an index of small integers.
   */
  async prepareImport(snapshot: LimiterSnapshot, mono = this.#clock.monotonic()): Promise<() => void> {
    // Slot times are in the clock's time as of `mono`; the swap sets #shift so that the
    // limiter reads `mono` then, however long it took to get there.
    const { ids, numbers: n } = snapshot;
    // A bound made smaller since the save keeps the most recently used ids, as an eviction would.
    const first = Math.max(0, ids.length - (Number.isFinite(this.#maxEntries) ? this.#maxEntries : ids.length));
    const t = new Table(Math.max(INITIAL_SLOTS, ids.length - first + 1));
    const fill = (from: number, to: number): void => {
      const num = t.num; // sized for them all: it does not grow meanwhile
      for (let i = from; i < to; i++) {
        const id = ids[i] as string;
        const dup = t.index.get(id);
        if (dup !== undefined) {
          // Not from an export (ids are unique there): the later one wins, as restore() does.
          unlinkSlot(t, dup);
          t.release(dup);
        }
        const slot = t.take(id);
        const at = i * SNAPSHOT_FIELDS;
        const o = slot * NUMBERS;
        num[o + N_PER_MINUTE] = n[at + F.perMinute] as number;
        num[o + N_PER_DAY] = n[at + F.perDay] as number;
        num[o + N_MINUTE] = n[at + F.minute] as number;
        num[o + N_DAY] = n[at + F.day] as number;
        num[o + N_AT] = mono - (n[at + F.ageMs] as number);
        num[o + N_STRIKES] = n[at + F.strikes] as number;
        const banLeft = n[at + F.banLeftMs] as number;
        num[o + N_BANNED_UNTIL] = banLeft > 0 ? mono + banLeft : 0;
        num[o + N_BORN] = 0;
        appendSlot(t, slot);
      }
    };
    for (let i = first; i < ids.length; ) {
      if (i > first) await yieldToLoop();
      i = step(i, Math.min(ids.length, i + SNAPSHOT_CHUNK), fill);
    }
    return () => {
      this.#shift = this.#clock.monotonic() - mono;
      this.#t = t;
    };
  }

  /** `slot` is about to change: if the export under way has not written it, keeps its state as it was. */
  #beforeChange(slot: number): void {
    const x = this.#export as ExportSession;
    const t = this.#t;
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
  #beforeUnlink(slot: number): void {
    const x = this.#export as ExportSession;
    const t = this.#t;
    if (x.t !== t) return;
    const link = t.link;
    const l = slot * LINKS;
    if ((t.num[slot * NUMBERS + N_BORN] as number) > x.added || link[l + L_PASSED] === x.id || link[l + L_MOVED] === x.id) return;
    this.#beforeChange(slot);
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

  /** Finds or creates the slot of `id` and marks it most recently used. */
  #touch(id: string, limits: Limits, mono: number): number {
    const t = this.#t;
    const slot = t.index.get(id);
    if (slot === undefined) {
      const created = this.#insert(id, limits, mono);
      const num = t.num;
      const o = created * NUMBERS;
      num[o + N_MINUTE] = this.#startEmpty ? 0 : limits.perMinute * MINUTE_MS;
      num[o + N_DAY] = this.#startEmpty ? 0 : limits.perDay * DAY_MS;
      return created;
    }
    if (slot !== t.youngest) {
      this.#unlink(slot);
      appendSlot(t, slot);
    }
    return slot;
  }

  /**
   * Adds `id` as the youngest, its limits `limits` and its time `mono` (buckets empty, no
   * refusal, no ban: the caller fills them), evicting the oldest beyond maxEntries.
   */
  #insert(id: string, limits: Limits, mono: number): number {
    const t = this.#t;
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
    num[o + N_BORN] = ++this.#added;
    appendSlot(t, slot);
    while (t.index.size > this.#maxEntries && t.oldest !== NONE) this.#remove(t.oldest);
    return slot;
  }

  #remove(slot: number): void {
    this.#unlink(slot);
    this.#t.release(slot);
  }

  #unlink(slot: number): void {
    if (this.#export !== undefined) this.#beforeUnlink(slot);
    unlinkSlot(this.#t, slot);
  }

  /** Counts a refusal and decides between 429 rate_limited and the start of a ban. */
  #refuse(num: Float64Array, o: number, limits: Limits, strings: PolicyStrings, mono: number): LimitResult {
    const strikes = (num[o + N_STRIKES] as number) + 1;
    num[o + N_STRIKES] = strikes;
    // The first refusal plus `after` more are plain 429s; the one after those starts a ban.
    if (strikes > this.#banAfter + 1 && this.#banMs > 0) {
      num[o + N_STRIKES] = 0; // "when the ban ends, the counter is 0"
      num[o + N_BANNED_UNTIL] = mono + this.#banMs;
      return this.#banned(num, o, limits, strings, mono);
    }
    return this.#result('rate_limited', num, o, limits, strings, msUntilAdmittedSlot(num, o, limits));
  }

  /**
   * The answer during a ban. Its Retry-After covers the refill too: a ban shorter than one
   * token's refill would otherwise send a client that waited it into another 429. Nothing is
   * charged during a ban, so the bucket refills as usual meanwhile.
   */
  #banned(num: Float64Array, o: number, limits: Limits, strings: PolicyStrings, mono: number): LimitResult {
    const banLeft = (num[o + N_BANNED_UNTIL] as number) - mono;
    const refillLeft = msUntilAdmittedSlot(num, o, limits);
    return this.#result('temporarily_banned', num, o, limits, strings, banLeft > refillLeft ? banLeft : refillLeft);
  }

  #result(outcome: LimitOutcome, num: Float64Array, o: number, limits: Limits, strings: PolicyStrings, waitMs: number): LimitResult {
    return limitResult(outcome, num[o + N_MINUTE] as number, num[o + N_DAY] as number, limits, strings, waitMs, this.#clock.now());
  }
}

/** Links `slot` in as the youngest. */
function appendSlot(t: Table, slot: number): void {
  const link = t.link;
  const l = slot * LINKS;
  link[l + L_PREV] = t.youngest;
  link[l + L_NEXT] = NONE;
  if (t.youngest === NONE) t.oldest = slot;
  else link[t.youngest * LINKS + L_NEXT] = slot;
  t.youngest = slot;
}

/** Takes `slot` out of the LRU list. */
function unlinkSlot(t: Table, slot: number): void {
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
