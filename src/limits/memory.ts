// Per-id rate limiting: two token buckets (minute and day) plus a temporary ban for clients
// that keep sending after a 429. CONTRACT.md section 4 is the specification of this file.
//
// Header syntax: X-RateLimit-* (de facto convention, named by the spec) and the structured
// fields `RateLimit-Policy` / `RateLimit` of draft-ietf-httpapi-ratelimit-headers (the list
// form with named policies and the q/w and r/t parameters, introduced in -08 and kept since).
// The meaning of `t` follows -11 (section 4.1.2, "effective window": the seconds within which
// the client can use no more than the available quota `r`), which for a token bucket is the
// same number as -10's "seconds until additional quota is made available": the time until the
// next whole token. Section 6: Retry-After never points earlier than `t`.
//
// Bucket arithmetic uses clock.monotonic() only, so that a wall clock step neither fills nor
// empties a bucket; clock.now() is read only to turn "time until full" into a Unix Reset.

import type { Clock } from './core/types.js';

export interface Limits {
  readonly perMinute: number;
  readonly perDay: number;
}

export interface BanPolicy {
  /** Refusals answered 'rate_limited' after the first one before a ban starts. */
  readonly after: number;
  /** Length of a ban in seconds (0 disables bans). */
  readonly seconds: number;
}

export type LimitOutcome = 'ok' | 'rate_limited' | 'temporarily_banned';

export interface LimitResult {
  readonly outcome: LimitOutcome;
  /** Whole seconds, rounded up; 0 when ok. */
  readonly retryAfter: number;
  /** Values of X-RateLimit-Limit, -Remaining, -Reset, RateLimit-Policy and RateLimit. */
  readonly limit: string;
  readonly remaining: string;
  readonly reset: string;
  readonly policy: string;
  readonly rateLimit: string;
  /** Header name/value pairs to add to the response (Retry-After included on a refusal). */
  readonly headers: ReadonlyArray<readonly [string, string]>;
}

/** Plain fields for the hot path; the pairs are built only when someone asks for them. */
class Result implements LimitResult {
  constructor(
    readonly outcome: LimitOutcome,
    readonly retryAfter: number,
    readonly limit: string,
    readonly remaining: string,
    readonly reset: string,
    readonly policy: string,
    readonly rateLimit: string,
  ) {}

  get headers(): ReadonlyArray<readonly [string, string]> {
    const pairs: Array<readonly [string, string]> = [
      ['X-RateLimit-Limit', this.limit],
      ['X-RateLimit-Remaining', this.remaining],
      ['X-RateLimit-Reset', this.reset],
      ['RateLimit-Policy', this.policy],
      ['RateLimit', this.rateLimit],
    ];
    if (this.outcome !== 'ok') pairs.push(['Retry-After', String(this.retryAfter)]);
    return pairs;
  }
}

export interface LimiterOptions {
  clock: Clock;
  ban: BanPolicy;
  /** Default unbounded; when set, least-recently-used ids are evicted beyond it. */
  maxEntries?: number;
}

/** One id in a snapshot. Token counts and the ban are as of LimiterState.savedAt. */
export interface LimiterStateEntry {
  readonly id: string;
  /** Limits in force when saved: they give the refill rate for the downtime. */
  readonly perMinute: number;
  readonly perDay: number;
  /** Tokens (may be fractional) in each bucket. */
  readonly minute: number;
  readonly day: number;
  /** Consecutive refusals so far. */
  readonly strikes: number;
  /** Ban time left in ms, 0 when not banned. */
  readonly banMs: number;
}

/** JSON-serializable snapshot of a Limiter, anchored on wall time. */
export interface LimiterState {
  readonly version: 1;
  /** clock.now() at the snapshot (Unix ms). */
  readonly savedAt: number;
  /** Oldest (least recently used) first, so restore() rebuilds the LRU order. */
  readonly entries: readonly LimiterStateEntry[];
}

export const LIMITER_STATE_VERSION = 1;

/**
 * Largest perMinute or perDay a config (or a saved state) may give. The token arithmetic
 * below is exact while capacity * windowMs < 2^53 (perDay up to about 10^8); beyond, a
 * double's rounding is about capacity / 2^52 of a token per step, under 1/4000 of a token
 * at 10^12 (the "unlimited" plans of the bench and the soak). Much further, taking a token
 * could round to taking nothing, and the bucket would never refuse.
 */
export const MAX_LIMIT = 1_000_000_000_000;
/** Longest ban a config (or a saved state) may give: one year. */
export const MAX_BAN_SECONDS = 31_536_000;

const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;

// Tokens are stored in "token-milliseconds of window" (tokens * windowMs). A refill of
// elapsedMs then adds elapsedMs * capacity, which is an exact integer for integer clocks,
// so "59 s after empty the free plan has exactly 59 tokens" holds without an epsilon.
// Exact up to capacity * windowMs < 2^53, i.e. perDay below about 10^8.
//
// Real monotonic clocks are fractional, and (t + 1000) - t need not be exactly 1000 in
// floating point: a client that waited exactly Retry-After could find its bucket a hair
// short of a token and be refused (and, repeated, banned). So a bucket counts as holding a
// token when it would hold one within SLACK_MS; the gift is one microsecond of refill.
const SLACK_MS = 0.001;

/**
 * The slack of one bucket: SLACK_MS, but never more than a thousandth of one token's refill.
 * Unbounded, from about 6 * 10^7 per minute a microsecond refills a whole token, and the
 * bucket would never refuse. (Only tiny plans need the slack: there Retry-After is about one
 * token's refill; a token that refills in under a second is long back after a whole second.)
 */
function slackMs(windowMs: number, capacity: number): number {
  const tokenMs = windowMs / capacity;
  return tokenMs < 1 ? tokenMs * 0.001 : SLACK_MS;
}

/** Whole tokens in a bucket (see SLACK_MS). */
function wholeTokens(units: number, windowMs: number, capacity: number): number {
  // Clamped: the slack would otherwise show a full bucket as holding one token more.
  return Math.min(capacity, Math.floor((units + capacity * slackMs(windowMs, capacity)) / windowMs));
}

/** ms until a bucket holding `units` has one whole token (0 if it has one). */
function msUntilToken(units: number, windowMs: number, capacity: number): number {
  const ms = (windowMs - units) / capacity - slackMs(windowMs, capacity);
  return ms > 0 ? ms : 0;
}

/**
 * ms until a bucket holding `units` has one whole token more than now: the RateLimit `t`.
 * For a full bucket that is one token's refill: spent at once, the first token comes back
 * then. Always positive.
 */
function msUntilNextToken(units: number, windowMs: number, capacity: number): number {
  const slack = slackMs(windowMs, capacity);
  const whole = Math.floor((units + capacity * slack) / windowMs);
  return ((whole + 1) * windowMs - units) / capacity - slack;
}

/** ms until a bucket holding `units` is full again (0 if it is). */
function msUntilFull(units: number, windowMs: number, capacity: number): number {
  const ms = windowMs - units / capacity - slackMs(windowMs, capacity);
  return ms > 0 ? ms : 0;
}

/**
 * Mutable per-id state; a class so every entry has one hidden shape. Entries also form a
 * doubly linked list in least-recently-used order: evicting from a Map by
 * `keys().next()` is O(holes) in V8 once many deletions accumulate at its front.
 */
class Entry {
  readonly id: string;
  /** Neighbours in the LRU list (prev is older). */
  prev: Entry | undefined = undefined;
  next: Entry | undefined = undefined;
  minute: number;
  day: number;
  /** monotonic() at the last refill. */
  at: number;
  /** Limits of the last refill (the rate used by toState()). */
  perMinute: number;
  perDay: number;
  /** Consecutive refusals; reset on admission and when a ban starts. */
  strikes = 0;
  /** monotonic() at which the ban ends; 0 or past when not banned. */
  bannedUntil = 0;

  constructor(id: string, limits: Limits, at: number) {
    this.id = id;
    this.minute = limits.perMinute * MINUTE_MS;
    this.day = limits.perDay * DAY_MS;
    this.at = at;
    this.perMinute = limits.perMinute;
    this.perDay = limits.perDay;
  }
}

/** Strings that depend only on the limits' values, computed once per distinct value. */
interface PolicyStrings {
  readonly policy: string;
  readonly minuteLimit: string;
  readonly dayLimit: string;
}

const POLICY_CACHE_MAX = 1024;

function checkLimits(limits: Limits): void {
  for (const [name, v] of [['perMinute', limits.perMinute], ['perDay', limits.perDay]] as const) {
    if (!(Number.isFinite(v) && v > 0)) throw new RangeError(`limits.${name} must be a positive number, got ${v}`);
  }
}

/**
 * Throws (RangeError) unless Limiter.configure() would accept these arguments, so that a
 * config reload can check everything before it changes anything.
 */
export function checkConfiguration(ban: BanPolicy, maxEntries?: number): void {
  const { after, seconds } = ban;
  if (!(after >= 0 && (Number.isInteger(after) || after === Infinity))) {
    throw new RangeError(`ban.after must be a non-negative integer, got ${after}`);
  }
  if (!(Number.isFinite(seconds) && seconds >= 0)) {
    throw new RangeError(`ban.seconds must be a non-negative number, got ${seconds}`);
  }
  const max = maxEntries ?? Infinity;
  if (!(max === Infinity || (Number.isInteger(max) && max >= 1))) {
    throw new RangeError(`maxEntries must be a positive integer, got ${max}`);
  }
}

/** Refills both buckets up to `mono` at the rates of `limits`, clamped to their capacities. */
function refill(e: Entry, limits: Limits, mono: number): void {
  const elapsed = mono > e.at ? mono - e.at : 0;
  const minuteCap = limits.perMinute * MINUTE_MS;
  const dayCap = limits.perDay * DAY_MS;
  // Clamp even when elapsed is 0: the limits may have shrunk since the last call.
  e.minute = Math.min(minuteCap, e.minute + elapsed * limits.perMinute);
  e.day = Math.min(dayCap, e.day + elapsed * limits.perDay);
  e.at = mono;
  e.perMinute = limits.perMinute;
  e.perDay = limits.perDay;
}

export class Limiter {
  readonly #clock: Clock;
  #banAfter = 0;
  #banMs = 0;
  #maxEntries = Infinity;
  readonly #entries = new Map<string, Entry>();
  /** Oldest and youngest ends of the LRU list. */
  #oldest: Entry | undefined = undefined;
  #youngest: Entry | undefined = undefined;
  /** perMinute -> perDay -> strings; by value so fresh Limits objects still hit. */
  readonly #policies = new Map<number, Map<number, PolicyStrings>>();
  #policyCount = 0;
  /** Reused by peek() for unknown ids so that peeking allocates no entry. */
  readonly #scratch = new Entry('', { perMinute: 1, perDay: 1 }, 0);

  constructor(opts: LimiterOptions) {
    this.#clock = opts.clock;
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
  take(id: string, limits: Limits): LimitResult {
    const strings = this.#policyStrings(limits);
    const mono = this.#clock.monotonic();
    const e = this.#touch(id, limits, mono);
    refill(e, limits, mono);

    if (e.bannedUntil > mono) {
      // A ban is not extended by requests made during it, and charges nothing.
      return this.#banned(e, limits, strings, mono);
    }
    if (this.#msUntilAdmitted(e, limits) === 0) {
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
    const strings = this.#policyStrings(limits);
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
    const wait = this.#msUntilAdmitted(e, limits);
    return this.#result(wait === 0 ? 'ok' : 'rate_limited', e, limits, strings, wait);
  }

  /** Drops the state of every id not in `ids` (e.g. keys revoked by a config reload). */
  retain(ids: ReadonlySet<string>): void {
    for (const [id, e] of this.#entries) {
      if (!ids.has(id)) this.#remove(e);
    }
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

  /** Finds or creates the entry of `id` and marks it most recently used. */
  #touch(id: string, limits: Limits, mono: number): Entry {
    const e = this.#entries.get(id);
    if (e === undefined) {
      const created = new Entry(id, limits, mono);
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
    return this.#result('rate_limited', e, limits, strings, this.#msUntilAdmitted(e, limits));
  }

  /**
   * The answer during a ban. Its Retry-After covers the refill too: a ban shorter than one
   * token's refill would otherwise send a client that waited it into another 429. Nothing is
   * charged during a ban, so the bucket refills as usual meanwhile.
   */
  #banned(e: Entry, limits: Limits, strings: PolicyStrings, mono: number): LimitResult {
    const banLeft = e.bannedUntil - mono;
    const refillLeft = this.#msUntilAdmitted(e, limits);
    return this.#result('temporarily_banned', e, limits, strings, banLeft > refillLeft ? banLeft : refillLeft);
  }

  /** ms until every bucket holds a whole token, i.e. until a request would be admitted. */
  #msUntilAdmitted(e: Entry, limits: Limits): number {
    return Math.max(
      msUntilToken(e.minute, MINUTE_MS, limits.perMinute),
      msUntilToken(e.day, DAY_MS, limits.perDay),
    );
  }

  /**
   * Builds the response headers for the binding bucket: the one with fewer whole tokens
   * left, the minute bucket on a tie. On any refusal Remaining is 0 (the client may not send).
   * `waitMs` is the time until a request would be admitted (0 when ok): Retry-After.
   */
  #result(outcome: LimitOutcome, e: Entry, limits: Limits, strings: PolicyStrings, waitMs: number): LimitResult {
    const minuteWhole = wholeTokens(e.minute, MINUTE_MS, limits.perMinute);
    const dayWhole = wholeTokens(e.day, DAY_MS, limits.perDay);
    const minuteBinds = minuteWhole <= dayWhole;
    const remaining = outcome === 'ok' ? (minuteBinds ? minuteWhole : dayWhole) : 0;
    let msToFull = minuteBinds
      ? msUntilFull(e.minute, MINUTE_MS, limits.perMinute)
      : msUntilFull(e.day, DAY_MS, limits.perDay);
    let msToNext = minuteBinds
      ? msUntilNextToken(e.minute, MINUTE_MS, limits.perMinute)
      : msUntilNextToken(e.day, DAY_MS, limits.perDay);
    if (outcome === 'temporarily_banned') {
      // Nothing is available until the ban (and the refill) is over: t and Retry-After agree,
      // and Reset is not before the ban's end.
      msToNext = waitMs;
      if (waitMs > msToFull) msToFull = waitMs;
    }
    const resetAt = Math.ceil((this.#clock.now() + msToFull) / 1000);
    const remainingStr = String(remaining);
    return new Result(
      outcome,
      Math.ceil(waitMs / 1000),
      minuteBinds ? strings.minuteLimit : strings.dayLimit,
      remainingStr,
      String(resetAt),
      strings.policy,
      // draft-ietf-httpapi-ratelimit-headers-11: RateLimit is a List of service limit items,
      // each a String naming the policy with r (available quota) and t (section 4.1.2: the
      // seconds within which no more than r can be used, here until the next whole token).
      // On a refusal the binding bucket is one without a whole token, so Retry-After (the
      // wait for every bucket) is never earlier than t (section 6).
      (minuteBinds ? '"minute";r=' : '"day";r=') + remainingStr + ';t=' + Math.ceil(msToNext / 1000),
    );
  }

  /** Strings that depend only on the limits, cached by value (plans are few). */
  #policyStrings(limits: Limits): PolicyStrings {
    let byDay = this.#policies.get(limits.perMinute);
    const hit = byDay?.get(limits.perDay);
    if (hit !== undefined) return hit;
    checkLimits(limits);
    if (this.#policyCount >= POLICY_CACHE_MAX) {
      // Only reachable if limits vary wildly (e.g. per-key custom limits by the thousand).
      this.#policies.clear();
      this.#policyCount = 0;
      byDay = undefined;
    }
    if (byDay === undefined) {
      byDay = new Map();
      this.#policies.set(limits.perMinute, byDay);
    }
    const strings: PolicyStrings = {
      // draft-ietf-httpapi-ratelimit-headers: RateLimit-Policy is a List of String items,
      // each a policy name with q (quota units) and w (window in seconds).
      policy: `"minute";q=${limits.perMinute};w=60, "day";q=${limits.perDay};w=86400`,
      minuteLimit: String(limits.perMinute),
      dayLimit: String(limits.perDay),
    };
    byDay.set(limits.perDay, strings);
    this.#policyCount += 1;
    return strings;
  }
}
