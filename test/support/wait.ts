// Waiting for something another process does (a log line, a reload, a reconnect), the one way
// every test does it: poll, and fail with what was awaited when it does not come. The bound is
// generous on purpose: it only decides how long a broken test takes to fail, never whether a
// working one passes, so it stays far above what the slowest run on two busy cores needs.

/** How long `until` waits by default before it fails. */
export const UNTIL_MS = 30_000;

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Resolves after `ms`, without keeping the process alive: the other side of a
 * `Promise.race` that bounds a wait. (A plain sleep there holds the test file's process open
 * for the rest of its `ms` after the test is done: a 60 s bound cost 50 s per run.)
 */
export const bound = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms).unref());

/**
 * Polls `check` every `everyMs` until it returns true; throws `not within N ms: <what>` when
 * `ms` passed first. A check that throws fails at once.
 */
export async function until(what: string, check: () => boolean | Promise<boolean>, ms = UNTIL_MS, everyMs = 25): Promise<void> {
  const end = performance.now() + ms;
  for (;;) {
    if (await check()) return;
    if (performance.now() >= end) throw new Error(`not within ${ms} ms: ${what}`);
    await sleep(everyMs);
  }
}
