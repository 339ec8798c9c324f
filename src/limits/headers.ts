// The rate-limit response headers: their names (one list, used by the app, CORS and the
// OpenAPI document) and their values, computed from an id's buckets.
//
// Header syntax: X-RateLimit-* (de facto convention, named in docs/rate-limits.md) and
// the structured fields `RateLimit-Policy` / `RateLimit` of draft-ietf-httpapi-ratelimit-headers
// (the list form with named policies and the q/w and r/t parameters, introduced in -08 and
// kept since). The meaning of `t` follows -11 (section 4.1.2, "effective window": the seconds
// within which the client can use no more than the available quota `r`), which for a token
// bucket is the same number as -10's "seconds until additional quota is made available": the
// time until the next whole token. Section 6: Retry-After never points earlier than `t`.
import type { Limits } from '../core/index.js';
import { DAY_MS, MINUTE_MS, checkLimits, msUntilFull, msUntilNextToken, wholeTokens } from './buckets.js';
import type { LimitOutcome, LimitResult } from './contract.js';

/** Every response that was charged carries these (Retry-After too, on a refusal). */
export const RATE_LIMIT_HEADERS = ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset', 'RateLimit-Policy', 'RateLimit'] as const;

/**
 * Writes a charge's headers into a flat [name, value, ...] list (what the app writes) from
 * index `n` on, and returns the index after them; the one place where a LimitResult becomes
 * header fields, so the names above and the values cannot drift apart.
 */
export function writeLimitHeaders(out: string[], n: number, limit: LimitResult): number {
  out[n] = 'X-RateLimit-Limit';
  out[n + 1] = limit.limit;
  out[n + 2] = 'X-RateLimit-Remaining';
  out[n + 3] = limit.remaining;
  out[n + 4] = 'X-RateLimit-Reset';
  out[n + 5] = limit.reset;
  out[n + 6] = 'RateLimit-Policy';
  out[n + 7] = limit.policy;
  out[n + 8] = 'RateLimit';
  out[n + 9] = limit.rateLimit;
  if (limit.outcome === 'ok') return n + 10;
  out[n + 10] = 'Retry-After';
  out[n + 11] = String(limit.retryAfter);
  return n + 12;
}

/** Plain fields, one hidden shape for every result on the hot path. */
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
}

/** Strings that depend only on the limits' values, computed once per distinct value. */
export interface PolicyStrings {
  readonly policy: string;
  readonly minuteLimit: string;
  readonly dayLimit: string;
  /** The last admitted charge's result under these limits, and what it was made from (see limitResult). */
  readonly last: { result: LimitResult | undefined; minuteBinds: boolean; remaining: number; resetAt: number; t: number };
}

const POLICY_CACHE_MAX = 1024;

/** PolicyStrings cached by value (plans are few), so fresh Limits objects still hit. */
export class PolicyCache {
  /** perMinute -> perDay -> strings. */
  readonly #policies = new Map<number, Map<number, PolicyStrings>>();
  #count = 0;
  /**
   * The last limits object asked for and its strings: a key's limits are one object for as
   * long as its config is in force, so a client sending request after request is answered
   * without the two Map lookups (by numbers, the day's often not a small integer).
   */
  #lastLimits: Limits | undefined = undefined;
  #lastStrings: PolicyStrings | undefined = undefined;

  /** The strings of `limits`; throws (RangeError) on limits no bucket can have. */
  get(limits: Limits): PolicyStrings {
    if (limits === this.#lastLimits) return this.#lastStrings as PolicyStrings;
    const strings = this.#lookUp(limits);
    this.#lastLimits = limits;
    this.#lastStrings = strings;
    return strings;
  }

  #lookUp(limits: Limits): PolicyStrings {
    let byDay = this.#policies.get(limits.perMinute);
    const hit = byDay?.get(limits.perDay);
    if (hit !== undefined) return hit;
    checkLimits(limits);
    if (this.#count >= POLICY_CACHE_MAX) {
      // Only reachable if limits vary wildly (e.g. per-key custom limits by the thousand).
      this.#policies.clear();
      this.#count = 0;
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
      last: { result: undefined, minuteBinds: true, remaining: -1, resetAt: 0, t: 0 },
    };
    byDay.set(limits.perDay, strings);
    this.#count += 1;
    return strings;
  }
}

/**
 * Builds the response headers for the binding bucket: the one with fewer whole tokens
 * left, the minute bucket on a tie. On any refusal Remaining is 0 (the client may not send).
 * `waitMs` is the time until a request would be admitted (0 when ok): Retry-After. `minute`
 * and `day` are the buckets' contents in token-milliseconds; `nowMs` is the wall clock.
 */
export function limitResult(
  outcome: LimitOutcome, minute: number, day: number, limits: Limits, strings: PolicyStrings, waitMs: number, nowMs: number,
): LimitResult {
  const minuteWhole = wholeTokens(minute, MINUTE_MS, limits.perMinute);
  const dayWhole = wholeTokens(day, DAY_MS, limits.perDay);
  const minuteBinds = minuteWhole <= dayWhole;
  const remaining = outcome === 'ok' ? (minuteBinds ? minuteWhole : dayWhole) : 0;
  let msToFull = minuteBinds
    ? msUntilFull(minute, MINUTE_MS, limits.perMinute)
    : msUntilFull(day, DAY_MS, limits.perDay);
  let msToNext = minuteBinds
    ? msUntilNextToken(minute, MINUTE_MS, limits.perMinute)
    : msUntilNextToken(day, DAY_MS, limits.perDay);
  if (outcome === 'temporarily_banned') {
    // Nothing is available until the ban (and the refill) is over: t and Retry-After agree,
    // and Reset is not before the ban's end.
    msToNext = waitMs;
    if (waitMs > msToFull) msToFull = waitMs;
  }
  const resetAt = Math.ceil((nowMs + msToFull) / 1000);
  const t = Math.ceil(msToNext / 1000);
  // An admitted charge with the same numbers as the last one under these limits (a client with
  // a large budget, or requests within one refill) is answered with the same result: its
  // header values are made once, not per request.
  const last = strings.last;
  if (outcome === 'ok' && last.remaining === remaining && last.resetAt === resetAt && last.t === t && last.minuteBinds === minuteBinds && last.result !== undefined) {
    return last.result;
  }
  // Reset moves once a second at most for a busy client: its string is kept.
  if (resetAt !== lastReset) {
    lastReset = resetAt;
    lastResetString = String(resetAt);
  }
  const remainingStr = decimal(remaining);
  const result = new Result(
    outcome,
    Math.ceil(waitMs / 1000),
    minuteBinds ? strings.minuteLimit : strings.dayLimit,
    remainingStr,
    lastResetString,
    strings.policy,
    // draft-ietf-httpapi-ratelimit-headers-11: RateLimit is a List of service limit items,
    // each a String naming the policy with r (available quota) and t (section 4.1.2: the
    // seconds within which no more than r can be used, here until the next whole token).
    // On a refusal the binding bucket is one without a whole token, so Retry-After (the
    // wait for every bucket) is never earlier than t (section 6).
    rateLimitValue(minuteBinds, remainingStr, t),
  );
  if (outcome === 'ok') {
    last.result = result;
    last.minuteBinds = minuteBinds;
    last.remaining = remaining;
    last.resetAt = resetAt;
    last.t = t;
  }
  return result;
}

/**
 * The RateLimit value, `"minute";r=R;t=T`, made by one join: that gives a flat string, which
 * node's check of every header value reads at once; the same text made with `+` is a chain of
 * parts that the check has to copy into one string first, on every answer.
 */
function rateLimitValue(minuteBinds: boolean, remaining: string, t: number): string {
  const parts = RATE_LIMIT_PARTS;
  parts[0] = minuteBinds ? '"minute";r=' : '"day";r=';
  parts[1] = remaining;
  parts[3] = decimal(t);
  return parts.join('');
}
const RATE_LIMIT_PARTS: string[] = ['', '', ';t=', ''];

// The header values' number formatting, cheap on the hot path: the integers below 1,024
// (the Remaining of most plans) as strings made once, and the last Reset value's string.
const SMALL: readonly string[] = Array.from({ length: 1024 }, (_, i) => String(i));

/** `n` in decimal, from SMALL when it is below 1,024. */
function decimal(n: number): string {
  return n >= 0 && n < SMALL.length ? (SMALL[n] as string) : String(n);
}
let lastReset = Number.NaN;
let lastResetString = '';
