import type { Clock } from './types.js';

/** The real clock: Date.now() for wall time, performance.now() for intervals. */
export const systemClock: Clock = {
  now: () => Date.now(),
  monotonic: () => performance.now(),
};

/** A clock that moves only when told to; both readings advance together. */
export class ManualClock implements Clock {
  #wall: number;
  #mono = 0;
  /** @param wallStartMs the wall time to start at (default 2026-01-01T00:00:00Z); monotonic time starts at 0. */
  constructor(wallStartMs = Date.UTC(2026, 0, 1)) {
    this.#wall = wallStartMs;
  }
  /** Wall time in ms since the Unix epoch. */
  now(): number {
    return this.#wall;
  }
  /** Monotonic time in ms since this clock was made. */
  monotonic(): number {
    return this.#mono;
  }
  /** Advance both clocks by ms. */
  advance(ms: number): void {
    this.#wall += ms;
    this.#mono += ms;
  }
  /** Move only the wall clock (to test that intervals ignore it). */
  jumpWall(ms: number): void {
    this.#wall += ms;
  }
}
