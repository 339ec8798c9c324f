// The in-memory limiter: per id, two token buckets (minute and day) plus a temporary ban for
// clients that keep sending after a 429 (docs/rate-limits.md). This file is the rule: take,
// peek, refuse, ban. Beside it: where the ids live (slots.ts: a slot of typed arrays per id,
// indexed by a Map, bounded by least-recent use), the state saved across restarts
// (saved-state.ts, persist(): state.ts) and the snapshot export and import (snapshot-export.ts).
import type { Clock, Limits } from '../core/index.js';
import { DAY_MS, MINUTE_MS, checkConfiguration } from './buckets.js';
import type { BanPolicy, LimitOutcome, LimitResult, Limiter } from './contract.js';
import { PolicyCache, limitResult } from './headers.js';
import type { PolicyStrings } from './headers.js';
import { restoreSlots, stateOf } from './saved-state.js';
import {
  NUMBERS, N_AT, N_BANNED_UNTIL, N_DAY, N_MINUTE, N_PER_DAY, N_PER_MINUTE, N_STRIKES, Slots, msUntilAdmittedSlot, refillSlot,
} from './slots.js';
import { buildTable, exportSlots } from './snapshot-export.js';
import { loadLimiterState, startLimiterPersistence } from './state.js';
import type { LimiterPersistence, LimiterPersistenceOptions, LimiterSnapshot, LimiterState } from './state.js';

export interface LimiterOptions {
  clock: Clock;
  ban: BanPolicy;
  /** Default unbounded; when set, least-recently-used ids are evicted beyond it. */
  maxEntries?: number;
  /**
   * New ids start with both buckets empty instead of full (default false): the Redis
   * limiter's fallback with limitsOutage "strict", which must not hand out a fresh budget to
   * an id it knows nothing of.
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
  readonly #startEmpty: boolean;
  /** The ids and their state. */
  readonly #slots = new Slots();
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
    this.#slots.bound(maxEntries);
  }

  get size(): number {
    return this.#slots.size;
  }

  /** Charges one request to `id` (or refuses it) and returns the outcome and headers. */
  take(id: string, limits: Limits, now?: number): LimitResult {
    const strings = this.#policies.get(limits);
    const mono = (now ?? this.#clock.monotonic()) - this.#shift;
    const slots = this.#slots;
    const slot = slots.touch(id, limits, mono, this.#startEmpty);
    if (slots.export !== undefined) slots.beforeChange(slot);
    const num = slots.t.num;
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
    const slots = this.#slots;
    const num = slots.t.num;
    let slot = slots.t.index.get(id);
    if (slot === undefined) {
      // The scratch slot, as a fresh id would start.
      slot = 0;
      num[N_MINUTE] = limits.perMinute * MINUTE_MS;
      num[N_DAY] = limits.perDay * DAY_MS;
      num[N_AT] = mono;
      num[N_STRIKES] = 0;
      num[N_BANNED_UNTIL] = 0;
    } else if (slots.export !== undefined) {
      slots.beforeChange(slot);
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
    const slots = this.#slots;
    const slot = slots.touch(id, limits, mono, this.#startEmpty);
    if (slots.export !== undefined) slots.beforeChange(slot);
    const num = slots.t.num;
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
    this.#slots.retain(ids);
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
    this.#slots.reset();
  }

  /**
   * Snapshot for persistence (saved-state.ts). Ids whose state equals a fresh id's are left out.
   */
  toState(): LimiterState {
    return stateOf(this.#slots, this.#clock.monotonic() - this.#shift, this.#clock.now());
  }

  /**
   * Replaces the current state by a saved one (saved-state.ts): the downtime is measured on
   * the wall clock, clamped at 0, and credited at the saved rates; bans keep what is left.
   */
  restore(state: LimiterState): void {
    restoreSlots(this.#slots, state, this.#clock.now(), this.#clock.monotonic() - this.#shift);
  }

  /** The exact state of every id as it is at the call, copied in chunks (snapshot-export.ts). */
  exportSnapshot(): Promise<LimiterSnapshot> {
    return exportSlots(this.#slots, this.#clock.monotonic() - this.#shift);
  }

  /**
   * Builds the state of a snapshot aside, in chunks (snapshot-export.ts), and returns the step
   * that swaps it in at once. `mono`: the clock's monotonic time the entries are built for
   * (default now); at the swap each id is exactly as it was when saved.
   */
  async prepareImport(snapshot: LimiterSnapshot, mono = this.#clock.monotonic()): Promise<() => void> {
    const t = await buildTable(snapshot, mono, this.#slots.maxEntries);
    return () => {
      this.#shift = this.#clock.monotonic() - mono;
      this.#slots.t = t;
    };
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
