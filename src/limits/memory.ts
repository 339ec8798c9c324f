// The in-memory limiter: per id, two token buckets (minute and day) plus a temporary ban for
// clients that keep sending after a 429 (docs/rate-limits.md), in a Map bounded by
// least-recent use. Its state can be saved and restored (persist(): state.ts), so that day
// buckets and bans of keys survive a restart.
import type { Clock, Limits } from '../core/index.js';
import { DAY_MS, MINUTE_MS, checkConfiguration, checkLimits, msUntilAdmitted, refill } from './buckets.js';
import type { Buckets } from './buckets.js';
import type { BanPolicy, LimitOutcome, LimitResult, Limiter } from './contract.js';
import { PolicyCache, limitResult } from './headers.js';
import type { PolicyStrings } from './headers.js';
import { LIMITER_STATE_VERSION, SNAPSHOT_FIELDS, SnapshotField as F, loadLimiterState, startLimiterPersistence } from './state.js';
import type { LimiterPersistence, LimiterPersistenceOptions, LimiterSnapshot, LimiterState, LimiterStateEntry } from './state.js';

/**
 * Entries copied (or built) between two turns of the event loop by a snapshot's export and
 * import: well under a millisecond of work each (docs/harness.md, snapshots).
 */
export const SNAPSHOT_CHUNK = 4096;

/** An export under way: its number, its moment, and what it is filling. */
interface ExportSession {
  readonly id: number;
  /** Entries with a higher `born` were added since it began: not part of it. */
  readonly added: number;
  readonly mono: number;
  readonly ids: string[];
  readonly numbers: Float64Array;
  /** Entries written so far. */
  written: number;
  /** The next entry to write, in the list as it was when the export began. */
  cursor: Entry | undefined;
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

/** Gives the event loop one turn (timers, I/O) before going on. */
function yieldToLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** The SNAPSHOT_FIELDS numbers of `e` at `mono`, written into `n` from `at`. */
function writeNumbers(n: Float64Array, at: number, e: Entry, mono: number): void {
  n[at + F.perMinute] = e.perMinute;
  n[at + F.perDay] = e.perDay;
  n[at + F.minute] = e.minute;
  n[at + F.day] = e.day;
  n[at + F.ageMs] = mono - e.at;
  n[at + F.strikes] = e.strikes;
  n[at + F.banLeftMs] = e.bannedUntil > mono ? e.bannedUntil - mono : 0;
}

/** Appends the live state of `e` to the export's output. */
function writeLive(x: ExportSession, e: Entry): void {
  const i = x.written++;
  x.ids[i] = e.id;
  writeNumbers(x.numbers, i * SNAPSHOT_FIELDS, e, x.mono);
}

/** Appends copies to the export's output. */
function writeCopies(x: ExportSession, copies: Copies | undefined): void {
  for (let c = copies?.head; c !== undefined; c = c.next) {
    const i = x.written++;
    x.ids[i] = c.id;
    x.numbers.set(c.numbers, i * SNAPSHOT_FIELDS);
  }
}

function copyOf(e: Entry, mono: number): EntryCopy {
  const numbers = new Float64Array(SNAPSHOT_FIELDS);
  writeNumbers(numbers, 0, e, mono);
  return { id: e.id, numbers, next: undefined };
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

/**
 * Mutable per-id state; a class so every entry has one hidden shape. Entries also form a
 * doubly linked list in least-recently-used order: evicting from a Map by
 * `keys().next()` is O(holes) in V8 once many deletions accumulate at its front.
 */
class Entry implements Buckets {
  readonly id: string;
  /** Neighbours in the LRU list (prev is older). */
  prev: Entry | undefined = undefined;
  next: Entry | undefined = undefined;
  minute: number;
  day: number;
  at: number;
  perMinute: number;
  perDay: number;
  /** Consecutive refusals; reset on admission and when a ban starts. */
  strikes = 0;
  /** monotonic() at which the ban ends; 0 or past when not banned. */
  bannedUntil = 0;
  /** When it was added (MemoryLimiter's #added): an export takes the entries added before it. */
  born = 0;
  /**
   * Bookkeeping of the export under way (exportSnapshot), by its number: `passed`, the
   * export has written this entry; `copied`, its state as of the export was copied before a
   * change (and sits in `before`, last); `moved`, it left its place in the list since the
   * export began (touched or removed). `before`: copies of entries that stood just before
   * this one when the export began and left their place since, to be written before it.
   */
  passed = 0;
  copied = 0;
  moved = 0;
  before: Copies | undefined = undefined;

  constructor(id: string, limits: Limits, at: number, empty = false) {
    this.id = id;
    this.minute = empty ? 0 : limits.perMinute * MINUTE_MS;
    this.day = empty ? 0 : limits.perDay * DAY_MS;
    this.at = at;
    this.perMinute = limits.perMinute;
    this.perDay = limits.perDay;
  }
}

export class MemoryLimiter implements Limiter {
  readonly #clock: Clock;
  #banAfter = 0;
  #banMs = 0;
  #maxEntries = Infinity;
  readonly #startEmpty: boolean;
  #entries = new Map<string, Entry>();
  /** The export under way (exportSnapshot), whose entries are copied before they change. */
  #export: ExportSession | undefined = undefined;
  /** Numbers the exports. */
  #exports = 0;
  /** Entries added so far (each entry's `born`). */
  #added = 0;
  /**
   * How far this limiter's time runs behind the clock's monotonic time: 0 until a snapshot is
   * imported, which sets it so that the time the import took (building in chunks, the store
   * writing to disk) does not count: every id is exactly as saved at the swap.
   */
  #shift = 0;
  /** Oldest and youngest ends of the LRU list. */
  #oldest: Entry | undefined = undefined;
  #youngest: Entry | undefined = undefined;
  readonly #policies = new PolicyCache();
  /** Saves the state of the key limiter across restarts (see persist()); else undefined. */
  #persistence: LimiterPersistence | undefined = undefined;
  /** Reused by peek() for unknown ids so that peeking allocates no entry. */
  readonly #scratch = new Entry('', { perMinute: 1, perDay: 1 }, 0);

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
    while (this.#entries.size > this.#maxEntries && this.#oldest !== undefined) this.#remove(this.#oldest);
  }

  get size(): number {
    return this.#entries.size;
  }

  /** Charges one request to `id` (or refuses it) and returns the outcome and headers. */
  take(id: string, limits: Limits, now?: number): LimitResult {
    const strings = this.#policies.get(limits);
    const mono = (now ?? this.#clock.monotonic()) - this.#shift;
    const e = this.#touch(id, limits, mono);
    if (this.#export !== undefined) this.#beforeChange(e);
    refill(e, limits, mono);

    if (e.bannedUntil > mono) {
      // A ban is not extended by requests made during it, and charges nothing.
      return this.#banned(e, limits, strings, mono);
    }
    if (msUntilAdmitted(e, limits) === 0) {
      // Never below 0 (SLACK_MS may admit a hair early), so snapshots stay well-formed.
      e.minute = Math.max(0, e.minute - MINUTE_MS);
      e.day = Math.max(0, e.day - DAY_MS);
      e.strikes = 0;
      return this.#result('ok', e, limits, strings, 0);
    }
    return this.#refuse(e, limits, strings, mono);
  }

  /** Headers for the current state of `id` without charging it or counting a refusal. */
  peek(id: string, limits: Limits): LimitResult {
    const strings = this.#policies.get(limits);
    const mono = this.#clock.monotonic() - this.#shift;
    let e = this.#entries.get(id);
    if (e === undefined) {
      e = this.#scratch;
      e.minute = limits.perMinute * MINUTE_MS;
      e.day = limits.perDay * DAY_MS;
      e.at = mono;
      e.strikes = 0;
      e.bannedUntil = 0;
    } else if (this.#export !== undefined) {
      this.#beforeChange(e);
    }
    refill(e, limits, mono);
    if (e.bannedUntil > mono) return this.#banned(e, limits, strings, mono);
    const wait = msUntilAdmitted(e, limits);
    return this.#result(wait === 0 ? 'ok' : 'rate_limited', e, limits, strings, wait);
  }

  /** Sets the state of `id` as of now (what Redis last said of it), marking it most recently used. */
  put(id: string, limits: Limits, known: KnownState): void {
    const mono = this.#clock.monotonic() - this.#shift;
    const e = this.#touch(id, limits, mono);
    if (this.#export !== undefined) this.#beforeChange(e);
    e.minute = Math.min(limits.perMinute * MINUTE_MS, Math.max(0, known.minute));
    e.day = Math.min(limits.perDay * DAY_MS, Math.max(0, known.day));
    e.at = mono;
    e.perMinute = limits.perMinute;
    e.perDay = limits.perDay;
    e.strikes = known.strikes;
    e.bannedUntil = known.banMs > 0 ? mono + known.banMs : 0;
  }

  /** Drops the state of every id not in `ids` (e.g. keys revoked by a config reload). */
  retain(ids: ReadonlySet<string>): void {
    for (const [id, e] of this.#entries) {
      if (!ids.has(id)) this.#remove(e);
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
    this.#entries.clear();
    this.#oldest = undefined;
    this.#youngest = undefined;
  }

  /**
   * Snapshot for persistence. Ids whose state equals a fresh id's (both buckets full, no
   * refusal, no ban) are left out: restoring them would change nothing.
   */
  toState(): LimiterState {
    const mono = this.#clock.monotonic() - this.#shift;
    const entries: LimiterStateEntry[] = [];
    for (let e = this.#oldest; e !== undefined; e = e.next) {
      if (this.#export !== undefined) this.#beforeChange(e);
      refill(e, e, mono);
      const banMs = e.bannedUntil > mono ? e.bannedUntil - mono : 0;
      const full = e.minute >= e.perMinute * MINUTE_MS && e.day >= e.perDay * DAY_MS;
      if (full && e.strikes === 0 && banMs === 0) continue;
      entries.push({
        id: e.id,
        perMinute: e.perMinute,
        perDay: e.perDay,
        minute: e.minute / MINUTE_MS,
        day: e.day / DAY_MS,
        strikes: e.strikes,
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
    for (const s of state.entries) {
      const e = new Entry(s.id, s, mono);
      e.minute = Math.max(0, s.minute) * MINUTE_MS;
      e.day = Math.max(0, s.day) * DAY_MS;
      e.at = mono - downtime; // refill() below credits the downtime at the saved rates
      refill(e, s, mono);
      e.strikes = Math.max(0, Math.floor(s.strikes));
      const banLeft = s.banMs - downtime;
      e.bannedUntil = banLeft > 0 ? mono + banLeft : 0;
      const dup = this.#entries.get(s.id);
      if (dup !== undefined) this.#remove(dup);
      this.#insert(e);
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
    const count = this.#entries.size;
    const x: ExportSession = {
      id: ++this.#exports,
      added: this.#added,
      mono: this.#clock.monotonic() - this.#shift,
      ids: new Array<string>(count),
      numbers: new Float64Array(count * SNAPSHOT_FIELDS),
      written: 0,
      cursor: this.#oldest,
      tail: undefined,
    };
    this.#export = x;
    try {
      let n = 0;
      for (;;) {
        const e = x.cursor;
        // The list's old part ends where the entries added or moved since begin.
        if (e === undefined || e.born > x.added || e.moved === x.id) break;
        if (e.before !== undefined) {
          writeCopies(x, e.before);
          e.before = undefined;
        }
        if (e.copied !== x.id) writeLive(x, e);
        e.passed = x.id;
        x.cursor = e.next;
        if (++n % SNAPSHOT_CHUNK === 0) await yieldToLoop();
      }
      writeCopies(x, x.tail);
      if (x.written !== count) throw new Error(`limiter snapshot: ${x.written} entries written, ${count} expected`);
      return { ids: x.ids, numbers: x.numbers };
    } finally {
      this.#export = undefined;
    }
  }

  /**
   * Builds the state of a snapshot aside, in chunks that give the event loop a turn in
   * between (requests meanwhile see the state as it is), and returns the step that swaps it
   * in at once. `mono`: the clock's monotonic time the entries are built for (default now;
   * a restore that also puts back a clock offset passes the time that offset gives). At the
   * swap each id is exactly as it was when saved: the time until the swap does not count.
   */
  async prepareImport(snapshot: LimiterSnapshot, mono = this.#clock.monotonic()): Promise<() => void> {
    // Entry times are in the clock's time as of `mono`; the swap sets #shift so that the
    // limiter reads `mono` then, however long it took to get there.
    const entries = new Map<string, Entry>();
    let oldest: Entry | undefined;
    let youngest: Entry | undefined;
    const { ids, numbers: n } = snapshot;
    // A bound made smaller since the save keeps the most recently used ids, as an eviction would.
    const first = Math.max(0, ids.length - (Number.isFinite(this.#maxEntries) ? this.#maxEntries : ids.length));
    for (let start = first; start < ids.length; start += SNAPSHOT_CHUNK) {
      if (start > first) await yieldToLoop();
      const end = Math.min(ids.length, start + SNAPSHOT_CHUNK);
      for (let i = start; i < end; i++) {
        const id = ids[i] as string;
        const at = i * SNAPSHOT_FIELDS;
        const e = new Entry(id, { perMinute: n[at + F.perMinute] as number, perDay: n[at + F.perDay] as number }, mono - (n[at + F.ageMs] as number));
        e.minute = n[at + F.minute] as number;
        e.day = n[at + F.day] as number;
        e.strikes = n[at + F.strikes] as number;
        const banLeft = n[at + F.banLeftMs] as number;
        e.bannedUntil = banLeft > 0 ? mono + banLeft : 0;
        const dup = entries.get(id);
        if (dup !== undefined) {
          if (dup.prev === undefined) oldest = dup.next;
          else dup.prev.next = dup.next;
          if (dup.next === undefined) youngest = dup.prev;
          else dup.next.prev = dup.prev;
        }
        entries.set(id, e);
        e.prev = youngest;
        if (youngest === undefined) oldest = e;
        else youngest.next = e;
        youngest = e;
      }
    }
    return () => {
      this.#shift = this.#clock.monotonic() - mono;
      this.#entries = entries;
      this.#oldest = oldest;
      this.#youngest = youngest;
    };
  }

  /** Replaces the state by one exportSnapshot() gave, at once: each id exactly as it was then, LRU order kept. */
  async importSnapshot(snapshot: LimiterSnapshot): Promise<void> {
    (await this.prepareImport(snapshot))();
  }

  /** `e` is about to change: if the export under way has not written it, keeps its state as it was. */
  #beforeChange(e: Entry): void {
    const x = this.#export as ExportSession;
    if (e.born > x.added || e.passed === x.id || e.copied === x.id || e.moved === x.id) return;
    e.copied = x.id;
    const copy = copyOf(e, x.mono);
    // Its own copy goes after those of the entries before it.
    if (e.before === undefined) e.before = { head: copy, last: copy };
    else {
      e.before.last.next = copy;
      e.before.last = copy;
    }
  }

  /**
   * `e` is about to leave its place in the list (moved to the young end, or removed): if the
   * export under way has not written it, its copy (and the copies waiting before it) move to
   * the entry after it in the list's old part, or to the end of the export.
   */
  #beforeUnlink(e: Entry): void {
    const x = this.#export as ExportSession;
    if (e.born > x.added || e.passed === x.id || e.moved === x.id) return;
    this.#beforeChange(e);
    e.moved = x.id;
    const copies = e.before as Copies;
    e.before = undefined;
    const next = e.next;
    if (x.cursor === e) x.cursor = next;
    // Before whatever is left after it: the next entry of the old part, or else the copies
    // of the old part's end already taken (they stood after it).
    if (next !== undefined && next.born <= x.added && next.moved !== x.id) next.before = prepend(copies, next.before);
    else x.tail = prepend(copies, x.tail);
  }

  /** Finds or creates the entry of `id` and marks it most recently used. */
  #touch(id: string, limits: Limits, mono: number): Entry {
    const e = this.#entries.get(id);
    if (e === undefined) {
      const created = new Entry(id, limits, mono, this.#startEmpty);
      this.#insert(created);
      return created;
    }
    if (e !== this.#youngest) {
      this.#unlink(e);
      this.#append(e);
    }
    return e;
  }

  /** Adds a new entry as the youngest, evicting the oldest beyond maxEntries. */
  #insert(e: Entry): void {
    e.born = ++this.#added;
    this.#entries.set(e.id, e);
    this.#append(e);
    while (this.#entries.size > this.#maxEntries && this.#oldest !== undefined) {
      this.#remove(this.#oldest);
    }
  }

  #remove(e: Entry): void {
    this.#entries.delete(e.id);
    this.#unlink(e);
  }

  #append(e: Entry): void {
    e.prev = this.#youngest;
    e.next = undefined;
    if (this.#youngest === undefined) this.#oldest = e;
    else this.#youngest.next = e;
    this.#youngest = e;
  }

  #unlink(e: Entry): void {
    if (this.#export !== undefined) this.#beforeUnlink(e);
    if (e.prev === undefined) this.#oldest = e.next;
    else e.prev.next = e.next;
    if (e.next === undefined) this.#youngest = e.prev;
    else e.next.prev = e.prev;
    e.prev = undefined;
    e.next = undefined;
  }

  /** Counts a refusal and decides between 429 rate_limited and the start of a ban. */
  #refuse(e: Entry, limits: Limits, strings: PolicyStrings, mono: number): LimitResult {
    e.strikes += 1;
    // The first refusal plus `after` more are plain 429s; the one after those starts a ban.
    if (e.strikes > this.#banAfter + 1 && this.#banMs > 0) {
      e.strikes = 0; // "when the ban ends, the counter is 0"
      e.bannedUntil = mono + this.#banMs;
      return this.#banned(e, limits, strings, mono);
    }
    return this.#result('rate_limited', e, limits, strings, msUntilAdmitted(e, limits));
  }

  /**
   * The answer during a ban. Its Retry-After covers the refill too: a ban shorter than one
   * token's refill would otherwise send a client that waited it into another 429. Nothing is
   * charged during a ban, so the bucket refills as usual meanwhile.
   */
  #banned(e: Entry, limits: Limits, strings: PolicyStrings, mono: number): LimitResult {
    const banLeft = e.bannedUntil - mono;
    const refillLeft = msUntilAdmitted(e, limits);
    return this.#result('temporarily_banned', e, limits, strings, banLeft > refillLeft ? banLeft : refillLeft);
  }

  #result(outcome: LimitOutcome, e: Entry, limits: Limits, strings: PolicyStrings, waitMs: number): LimitResult {
    return limitResult(outcome, e.minute, e.day, limits, strings, waitMs, this.#clock.now());
  }
}
