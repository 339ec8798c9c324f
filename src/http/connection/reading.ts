// When a connection is read. node:http stops reading a connection whose answers pile up and
// reads it again once they have drained; turns.ts (requests waiting for their turn, or too
// many answers due) and pipeline.ts (requests held behind a non-safe one) stop it the same
// way, and one 'resume' listener per connection keeps it stopped while either still needs it.
import { cheapAbortOnClose, holdReading, releaseReading } from './node-internals.js';
import type { Connection } from './state.js';

/** Requests of one connection handled and not yet answered, past which it is neither read nor served. */
export const MAX_OUTSTANDING = 64;

/**
 * Whether the connection must stay unread: requests wait for their turn or behind a non-safe
 * one, too many answers are due, or too many over all connections, or it waits for room (turns.ts).
 */
export function mustStayUnread(conn: Connection): boolean {
  return conn.queued || conn.outstanding > MAX_OUTSTANDING >> 1 || conn.waitsForTotal || conn.waitsForRoom
    || (conn.held !== undefined && conn.held.waiting.length > 0);
}

/**
 * Stops reading the connection (as node does when its answers pile up). node resumes it once
 * its own backlog is sent: a 'resume' listener (run after node's) stops it again while this
 * connection must stay unread. Installed once, on the connection's first wait.
 */
export function holdUnread(conn: Connection): void {
  const socket = conn.socket;
  if (!conn.watching) {
    conn.watching = true;
    socket.on('resume', () => {
      if (mustStayUnread(conn)) holdReading(socket);
    });
    // When it closes, node's clean-up of what it sent stays cheap.
    cheapAbortOnClose(socket);
  }
  holdReading(socket);
}

/** Reads the connection again once nothing of ours holds it. */
export function readIfFree(conn: Connection): void {
  // (While node waits for the client to read its answers, node reads again on 'drain'.)
  if (conn.watching && !mustStayUnread(conn) && !conn.socket.writableNeedDrain) releaseReading(conn.socket);
}
