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
import { LIMITER_STATE_VERSION, loadLimiterState, startLimiterPersistence } from './state.js';
import type { LimiterPersistence, LimiterPersistenceOptions, LimiterSnapshot, LimiterState, LimiterStateEntry } from './state.js';

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
  readonly #entries = new Map<string, Entry>();
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
    const mono = now ?? this.#clock.monotonic();
    const e = this.#touch(id, limits, mono);
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
    const mono = this.#clock.monotonic();
    let e = this.#entries.get(id);
    if (e === undefined) {
      e = this.#scratch;
      e.minute = limits.perMinute * MINUTE_MS;
      e.day = limits.perDay * DAY_MS;
      e.at = mono;
      e.strikes = 0;
      e.bannedUntil = 0;
    }
    refill(e, limits, mono);
    if (e.bannedUntil > mono) return this.#banned(e, limits, strings, mono);
    const wait = msUntilAdmitted(e, limits);
    return this.#result(wait === 0 ? 'ok' : 'rate_limited', e, limits, strings, wait);
  }

  /** Sets the state of `id` as of now (what Redis last said of it), marking it most recently used. */
  put(id: string, limits: Limits, known: KnownState): void {
    const mono = this.#clock.monotonic();
    const e = this.#touch(id, limits, mono);
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
    const mono = this.#clock.monotonic();
    const entries: LimiterStateEntry[] = [];
    for (let e = this.#oldest; e !== undefined; e = e.next) {
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
    const mono = this.#clock.monotonic();
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

  /** The exact state of every id, oldest first (see LimiterSnapshot). O(ids), synchronous. */
  exportSnapshot(): LimiterSnapshot {
    const mono = this.#clock.monotonic();
    const entries: Array<LimiterSnapshot['entries'][number]> = [];
    for (let e = this.#oldest; e !== undefined; e = e.next) {
      entries.push({
        id: e.id, perMinute: e.perMinute, perDay: e.perDay, minute: e.minute, day: e.day,
        ageMs: mono - e.at, strikes: e.strikes, banLeftMs: e.bannedUntil > mono ? e.bannedUntil - mono : 0,
      });
    }
    return { entries };
  }

  /** Replaces the state by one exportSnapshot() gave: each id exactly as it was then, LRU order kept. */
  importSnapshot(snapshot: LimiterSnapshot): void {
    const mono = this.#clock.monotonic();
    this.reset();
    for (const s of snapshot.entries) {
      const e = new Entry(s.id, s, mono - s.ageMs);
      e.minute = s.minute;
      e.day = s.day;
      e.strikes = s.strikes;
      e.bannedUntil = s.banLeftMs > 0 ? mono + s.banLeftMs : 0;
      this.#insert(e);
    }
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
