// The messages between the primary of `--workers N` and its workers (node:cluster IPC). The
// primary serves no requests and knows nothing of metrics or faults: it starts, stops and
// restarts workers, and relays a worker's question to every other worker and their answers
// back (a scrape that sums the whole service, a fault set through one worker armed in all),
// and counts the claims on count faults, so that one `count` is exact across workers;
// for a scrape it keeps the last gather a short time, so that a flood of scrapes through
// every worker costs one round of snapshots per window.
// Every message carries `petstore`, so that nothing else on the channel is taken for one.

/** Worker -> primary. */
export type WorkerMessage =
  /**
   * Listening (the port is the one the primary holds for every worker), with the config as of
   * `generation`: the reloads (SIGHUPs) the primary had counted when this worker last read it.
   */
  | { readonly petstore: 'ready'; readonly url: string; readonly generation: number }
  /**
   * Ask every other worker `what`; the primary answers with `answers` (same id) once each one
   * answered or `timeoutMs` (default ASK_TIMEOUT_MS) is up.
   */
  | { readonly petstore: 'ask'; readonly id: number; readonly what: string; readonly payload: unknown; readonly timeoutMs?: number }
  /**
   * Every worker's answer to `what`, this one's included, from a gather the primary made no
   * more than maxAgeMs ago, or shares with the asks under way: one gather serves every worker
   * for that window (scrapes). Answered with `answers` (same id).
   */
  | { readonly petstore: 'gather'; readonly id: number; readonly what: string; readonly maxAgeMs: number }
  /** The answer to an `asked`. */
  | { readonly petstore: 'answer'; readonly id: number; readonly payload: unknown }
  /** Tell every other worker, no answer wanted. */
  | { readonly petstore: 'tell'; readonly what: string; readonly payload: unknown }
  /**
   * Take one of the `max` units of `name` (a count fault as armed): the primary answers
   * `answers` (same id) with [true] for the first `max` claims of that name and [false] after,
   * whichever workers they come from.
   */
  | { readonly petstore: 'claim'; readonly id: number; readonly name: string; readonly max: number };

/** Primary -> worker. */
export type PrimaryMessage =
  | { readonly petstore: 'asked'; readonly id: number; readonly what: string; readonly payload: unknown }
  /**
   * The answers of the other workers that answered in time (none when alone), and how many of
   * those asked did not (a worker that exits meanwhile is not counted: it serves no more).
   */
  | { readonly petstore: 'answers'; readonly id: number; readonly payloads: readonly unknown[]; readonly missing?: number }
  | { readonly petstore: 'told'; readonly what: string; readonly payload: unknown }
  /** The ready line is out: the worker's held log lines may follow it. */
  | { readonly petstore: 'release' }
  /** Reload the config file (the primary got SIGHUP, its `generation`-th): sent to starting workers too. */
  | { readonly petstore: 'reload'; readonly generation: number }
  /** Stop gracefully and exit (the primary got SIGTERM or SIGINT). */
  | { readonly petstore: 'stop' };

/** How long the primary waits for the other workers' answers; a worker that is busy starting or stopping is left out. */
export const ASK_TIMEOUT_MS = 2_000;
/** The longest wait an ask may name (a reset clearing Redis through every worker). */
export const MAX_ASK_TIMEOUT_MS = 30_000;

const WORKER_KINDS = new Set(['ready', 'ask', 'gather', 'answer', 'tell', 'claim']);
const PRIMARY_KINDS = new Set(['asked', 'answers', 'told', 'release', 'reload', 'stop']);

export function isWorkerMessage(m: unknown): m is WorkerMessage {
  return typeof m === 'object' && m !== null && WORKER_KINDS.has((m as { petstore?: unknown }).petstore as string);
}

export function isPrimaryMessage(m: unknown): m is PrimaryMessage {
  return typeof m === 'object' && m !== null && PRIMARY_KINDS.has((m as { petstore?: unknown }).petstore as string);
}
