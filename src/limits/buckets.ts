// Token bucket arithmetic, shared by every limiter that keeps the two buckets (minute and day)
// and the ban of docs/rate-limits.md.
//
// Bucket arithmetic uses clock.monotonic() only, so that a wall clock step neither fills nor
// empties a bucket; clock.now() is read only to turn "time until full" into a Unix Reset.
import type { Limits } from '../core/index.js';
import type { BanPolicy } from './contract.js';

export const MINUTE_MS = 60_000;
export const DAY_MS = 86_400_000;

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
export function slackMs(windowMs: number, capacity: number): number {
  const tokenMs = windowMs / capacity;
  return tokenMs < 1 ? tokenMs * 0.001 : SLACK_MS;
}

/** Whole tokens in a bucket (see SLACK_MS). */
export function wholeTokens(units: number, windowMs: number, capacity: number): number {
  // Clamped: the slack would otherwise show a full bucket as holding one token more.
  return Math.min(capacity, Math.floor((units + capacity * slackMs(windowMs, capacity)) / windowMs));
}

/** ms until a bucket holding `units` has one whole token (0 if it has one). */
export function msUntilToken(units: number, windowMs: number, capacity: number): number {
  const ms = (windowMs - units) / capacity - slackMs(windowMs, capacity);
  return ms > 0 ? ms : 0;
}

/**
 * ms until a bucket holding `units` has one whole token more than now: the RateLimit `t`.
 * For a full bucket that is one token's refill: spent at once, the first token comes back
 * then. Always positive.
 */
export function msUntilNextToken(units: number, windowMs: number, capacity: number): number {
  const slack = slackMs(windowMs, capacity);
  const whole = Math.floor((units + capacity * slack) / windowMs);
  return ((whole + 1) * windowMs - units) / capacity - slack;
}

/** ms until a bucket holding `units` is full again (0 if it is). */
export function msUntilFull(units: number, windowMs: number, capacity: number): number {
  const ms = windowMs - units / capacity - slackMs(windowMs, capacity);
  return ms > 0 ? ms : 0;
}

/** The state of one id's two buckets, in token-milliseconds of window (see above). */
export interface Buckets {
  minute: number;
  day: number;
  /** monotonic() at the last refill. */
  at: number;
  /** Limits of the last refill (the rate a snapshot is saved with). */
  perMinute: number;
  perDay: number;
}

export function checkLimits(limits: Limits): void {
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
export function refill(e: Buckets, limits: Limits, mono: number): void {
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

/** ms until every bucket holds a whole token, i.e. until a request would be admitted. */
export function msUntilAdmitted(e: Buckets, limits: Limits): number {
  return Math.max(
    msUntilToken(e.minute, MINUTE_MS, limits.perMinute),
    msUntilToken(e.day, DAY_MS, limits.perDay),
  );
}
