// The fair turns' bounds (turns.ts): what one connection, and all of them together, may have
// handled, queued or parsed at a time, and how many new connections start being read a turn.
// docs/reliability.md has them as a table, with what each protects against. (MAX_OUTSTANDING,
// per connection, is in reading.ts, beside the check that uses it.)

/** Requests of one connection handled per turn of the event loop. */
export const PER_TURN = 4;
/**
 * Queued requests handled per turn, over all connections (round robin). Keeps a turn short:
 * node accepts one new connection per turn, and runs timers once per turn.
 */
export const TURN_BUDGET = 64;
/**
 * Requests parsed and waiting for their turn, over all connections, past which a connection
 * that adds to a deep queue of its own (2 * MAX_OUTSTANDING parsed and unanswered) is closed. node parses a
 * whole read (64 KiB: up to a thousand small requests, 1.7 KB of memory each) before we see
 * any of it, so what one connection can make us hold is bounded only per read; this bounds
 * the total (about 14 MB), whatever the number of connections. A client that pipelines
 * within reason, or sends one request at a time, is never closed.
 */
export const MAX_QUEUED = 8_192;
/**
 * Waiting requests (queued and unanswered, over all connections) from which a request that
 * came in a large read (BIG_READ) is not handled at once but queued, even on a connection with
 * nothing waiting: such a read may push the total past MAX_QUEUED and have its connection
 * closed, and a request of it in flight (waiting on Redis) would keep every request node
 * parsed from that read alive until its answer, long enough to be promoted to V8's old space.
 */
export const NEAR_MAX_QUEUED = MAX_QUEUED >> 1;
/**
 * A read of more than this many bytes is a pipelining burst (a client sending one request at
 * a time sends one request's head per read).
 */
export const BIG_READ = 16 * 1024;
/**
 * Requests handled and not yet answered over all connections, past which only connections with
 * fewer than PER_TURN of their own in flight are served (see above).
 */
export const MAX_OUTSTANDING_TOTAL = 1_024;
/**
 * New connections that start being read per turn (the newest first), from the turn after they
 * are accepted: node accepts a flood's hundred connections over a few quick turns and would
 * read all of them in one poll, a hundred reads of pipelined requests parsed whole and alive
 * together for a second. While NEAR_MAX_QUEUED wait, one a turn.
 */
export const NEW_PER_TURN = 4;
/** The total below which the connections stopped by MAX_OUTSTANDING_TOTAL go on. */
export const RESUME_TOTAL = (MAX_OUTSTANDING_TOTAL >> 2) * 3;
