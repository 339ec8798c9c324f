// The end of a stop, for stdout and stderr: what is still queued for a reader gets until the
// stop's grace period has run out (counted from the signal, at least MIN_SETTLE_MS), then the
// process exits anyway. Without that bound, a harness that keeps the pipe open and never
// reads it (the pipe full, node's writes pending) would hold the process alive for good.
import { settleStdio } from '../core/index.js';

/** The grace of a stop: in-flight requests get this long (the server's default shutdown grace). */
export const STOP_GRACE_MS = 10_000;
/** However long the stop itself took, a reader gets at least this long to take the rest. */
const MIN_SETTLE_MS = 1_000;

/** Resolves with `code` once stdout and stderr are drained; exits with it if they never are. */
export async function settleThenExit(code: number, stopStartedAt: number): Promise<number> {
  const left = Math.max(MIN_SETTLE_MS, stopStartedAt + STOP_GRACE_MS - performance.now());
  if (await settleStdio(left)) return code;
  // The one exit outside the entry point: node keeps a process alive while a write to a full
  // pipe is pending, and nothing else can cancel it. What was queued is lost; the stop was not.
  process.exit(code);
}
