// The service's one source of time. Every answer that depends on time (token buckets, bans,
// Retry-After, X-RateLimit-Reset, RateLimit, idempotency key expiry, journal times) reads the
// ServiceClock it was given, never Date.now() or performance.now() directly. A harness moves it
// forward (POST /__admin/clock, or handle.clock.advance) to test an hour of backoff or a day
// limit in milliseconds; a reset takes it back to its base ("real time").
import { performance } from 'node:perf_hooks';
import type { Clock } from './types.js';

/**
 * Wall time read through the monotonic clock: Date.now() once per `resyncMs`, and in between
 * that reading plus the monotonic time since, in whole ms as Date.now() gives them. Every
 * charge of the limiter reads the wall clock (for X-RateLimit-Reset), and on node 26 Date.now()
 * is a call into V8's runtime that allocates its number, about a third of the whole charge;
 * performance.now() is a fast call. The two clocks part by the system clock's slew over one
 * window (NTP slews at 0.5 ms a second at most: under a microsecond in 100 ms), and a step of
 * the system clock (set by hand) shows within one window. (`dateNow` and `monoNow` are the
 * sources, injected by tests.)
 */
export function wallThroughMonotonic(dateNow: () => number, monoNow: () => number, resyncMs = 100): () => number {
  let wall = dateNow();
  let mono = monoNow();
  return () => {
    const at = monoNow();
    const since = at - mono;
    if (since >= 0 && since < resyncMs) return Math.floor(wall + since);
    wall = dateNow();
    mono = at;
    return wall;
  };
}

/**
 * The real clock: Date.now() for wall time (read as wallThroughMonotonic does), performance.now()
 * for intervals. (`performance` is imported rather than read from the global object, where node
 * defines it with a getter: read there, every call of monotonic() went through V8's global load IC.)
 */
export const systemClock: Clock = {
  now: wallThroughMonotonic(() => Date.now(), () => performance.now()),
  monotonic: () => performance.now(),
};

/** The most one advance may move the clock: ten years of 365 days, in ms. */
export const MAX_CLOCK_ADVANCE_MS = 315_360_000_000;
/**
 * The most the offset may add up to: a thousand years of 365 days. Well inside the safe
 * integer range and below year 9999, so every time the service writes stays valid RFC 3339.
 */
export const MAX_CLOCK_OFFSET_MS = 31_536_000_000_000;

/**
 * A base clock plus an offset that only grows until reset(): now() and monotonic() both carry
 * the offset, so wall-clock headers and interval arithmetic (buckets, bans) move together,
 * exactly as if that much time had passed.
 */
export class ServiceClock implements Clock {
  readonly #base: Clock;
  #offset = 0;

  /** @param base the time without any advance ("real time"); default the system clock. */
  constructor(base: Clock = systemClock) {
    this.#base = base;
  }

  /** Wall time in ms since the Unix epoch, offset included. */
  now(): number {
    return this.#base.now() + this.#offset;
  }

  /** Monotonic time in ms from an arbitrary origin, offset included. */
  monotonic(): number {
    return this.#base.monotonic() + this.#offset;
  }

  /** How far this clock is ahead of its base, in ms. */
  get offsetMs(): number {
    return this.#offset;
  }

  /**
   * Moves the clock forward by `ms` (a finite number >= 0). Throws RangeError, and moves
   * nothing, for a negative or non-finite amount or past MAX_CLOCK_OFFSET_MS in total.
   */
  advance(ms: number): void {
    if (!Number.isFinite(ms) || ms < 0) throw new RangeError(`the clock only moves forward: advance takes a finite number of ms >= 0, not ${String(ms)}`);
    if (this.#offset + ms > MAX_CLOCK_OFFSET_MS) {
      throw new RangeError(`the clock cannot move more than ${MAX_CLOCK_OFFSET_MS} ms ahead in total (it is ${this.#offset} ms ahead); reset it first`);
    }
    this.#offset += ms;
  }

  /** Back to the base clock: offset 0. */
  reset(): void {
    this.#offset = 0;
  }

  /** Sets the offset as a snapshot saved it (a restore may move the clock back). */
  restoreOffset(ms: number): void {
    if (!Number.isFinite(ms) || ms < 0 || ms > MAX_CLOCK_OFFSET_MS) throw new RangeError(`not a clock offset: ${String(ms)}`);
    this.#offset = ms;
  }
}

/** A base that stands still: wall time `wall`, monotonic time `mono`, moved only by jumpWall. */
class StandingBase implements Clock {
  wall: number;
  mono = 0;
  constructor(wall: number) {
    this.wall = wall;
  }
  now(): number {
    return this.wall;
  }
  monotonic(): number {
    return this.mono;
  }
}

/**
 * A clock that moves only when told to, for tests and embedders. Its "real time" stands still
 * at the start it was made with, so every advance (the embedder's own, an admin advance, a
 * handle.clock.advance) is its offset, and reset() (as POST /__admin/reset does) takes it back
 * to that start. Given to startPetstore, it is the service's clock itself: the embedder sees
 * every admin advance on it.
 */
export class ManualClock extends ServiceClock {
  readonly #standing: StandingBase;
  /** @param wallStartMs the wall time to start at (default 2026-01-01T00:00:00Z); monotonic time starts at 0. */
  constructor(wallStartMs = Date.UTC(2026, 0, 1)) {
    const standing = new StandingBase(wallStartMs);
    super(standing);
    this.#standing = standing;
  }

  /**
   * Moves the clock by `ms`. Forward, it adds to the offset, as any advance does; backward (a
   * test of a clock that goes back), it moves the standing start instead, so that the offset
   * stays what the service moved forward.
   */
  override advance(ms: number): void {
    if (ms < 0) {
      this.#standing.wall += ms;
      this.#standing.mono += ms;
      return;
    }
    super.advance(ms);
  }

  /** Move only the wall clock, not the offset (to test that intervals ignore a wall step). */
  jumpWall(ms: number): void {
    this.#standing.wall += ms;
  }
}

/** The service clock for a clock an embedder passed (itself if it is one), else the system's. */
export function serviceClock(given: Clock | undefined): ServiceClock {
  return given instanceof ServiceClock ? given : new ServiceClock(given ?? systemClock);
}
