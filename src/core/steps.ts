// Long work in steps (snapshots of the limiters and the store): each step runs until its item
// count or STEP_MS, whichever comes first, then gives the event loop a turn, so that a copy of
// a million entries never holds requests up for long. The time bound matters for the first
// steps, which run before V8 has compiled the loop and are several times slower.

/** How long one step runs at most before it gives the event loop a turn (ms). */
export const STEP_MS = 0.5;
/** Items between two looks at the time within a step. */
export const STEP_RUN = 128;

/** The steps waiting for their turn (see yieldToLoop), first come first served. */
const waiting: Array<() => void> = [];
let scheduled = false;

/** Lets one waiting step go on, and books the next one a turn of its own. */
function nextTurn(): void {
  const go = waiting.shift();
  scheduled = waiting.length > 0;
  if (scheduled) setImmediate(nextTurn);
  go?.();
}

/**
 * Gives the event loop one turn (timers, I/O) before going on. Steps of several copies
 * under way at once (a save copies both limiters and the store's keys side by side) go on
 * one per turn, not one after the other in the same turn: with a bare setImmediate each,
 * their steps would all run in the loop's same check phase, one block of their sum.
 */
export function yieldToLoop(): Promise<void> {
  return new Promise((resolve) => {
    waiting.push(resolve);
    if (!scheduled) {
      scheduled = true;
      setImmediate(nextTurn);
    }
  });
}

/**
 * Calls `work(from, to)` over [start, end) in runs of STEP_RUN items until `end`, or until
 * the step has run STEP_MS; returns where it stopped.
 */
export function step(start: number, end: number, work: (from: number, to: number) => void): number {
  const until = performance.now() + STEP_MS;
  let i = start;
  do {
    const to = Math.min(end, i + STEP_RUN);
    work(i, to);
    i = to;
  } while (i < end && performance.now() < until);
  return i;
}

/**
 * The steps of a loop that is not cut by index (an iterator, a linked list): counts its items,
 * and once a step has run `most` of them or STEP_MS, gives the event loop a turn.
 */
export class Steps {
  #n = 0;
  #until = performance.now() + STEP_MS;

  constructor(readonly most: number) {}

  /** Counts one item: a promise of the event loop's turn when this step is over, else undefined. */
  next(): Promise<void> | undefined {
    const n = ++this.#n;
    if (n % STEP_RUN !== 0 || (n !== this.most && performance.now() < this.#until)) return undefined;
    return yieldToLoop().then(() => {
      this.#n = 0;
      this.#until = performance.now() + STEP_MS;
    });
  }
}
