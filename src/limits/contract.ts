// The limiter contract: what the HTTP layer needs to charge a request to an id (a key digest
// or a client address). It imports nothing of the implementations, so a limiter kept
// elsewhere (a network cache, say) is one new file that implements it.
//
// take() may answer with a value or a promise: the in-memory limiter answers at once, and the
// request pipeline awaits only when it was handed a promise, so that path stays synchronous.
import type { Limits } from '../core/index.js';
import type { LimiterSnapshot } from './state.js';

export interface BanPolicy {
  /** Refusals answered 'rate_limited' after the first one before a ban starts. */
  readonly after: number;
  /** Length of a ban in seconds (0 disables bans). */
  readonly seconds: number;
}

export type LimitOutcome = 'ok' | 'rate_limited' | 'temporarily_banned';

/** One charge's outcome and the values of its headers (see headers.ts for their names). */
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
}

export interface Limiter {
  /** Charges one request to `id` (or refuses it) and returns the outcome and header values. */
  /**
   * `now`, when given, is the caller's reading of the monotonic clock for this request (read
   * once per request by the HTTP layer); without it the limiter reads its own clock. A
   * limiter kept elsewhere may keep its own time and ignore it.
   */
  take(id: string, limits: Limits, now?: number): LimitResult | Promise<LimitResult>;
  /**
   * Changes the ban policy and the size bound (a config reload). Throws (RangeError) on
   * values checkConfiguration refuses; bans already running keep their end.
   */
  configure(ban: BanPolicy, maxEntries?: number): void;
  /** Drops the state of every id not in `ids` (e.g. keys revoked by a config reload). */
  retain(ids: ReadonlySet<string>): void;
  /** Forgets every id: buckets, refusal counts and bans. */
  reset(): void | Promise<void>;
  /** Makes the state durable now, where the limiter keeps it durable at all; else resolves. */
  flush(): Promise<void>;
  /** Stops background work and makes the state durable a last time. Idempotent. */
  close(): Promise<void>;
  /**
   * The exact state as it is at the call, for a named snapshot, copied in chunks that yield
   * to the event loop; absent where the state is not in this process (Redis).
   */
  exportSnapshot?(): Promise<LimiterSnapshot>;
  /**
   * Builds a state exportSnapshot() gave aside, in chunks, and resolves with the step that
   * swaps it in at once (`mono`: the monotonic time of the swap, default now).
   */
  prepareImport?(snapshot: LimiterSnapshot, mono?: number): Promise<() => void>;
}
