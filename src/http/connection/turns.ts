// Fair turns: one connection cannot keep the others waiting, nor hold unbounded memory.
//
// node:http parses everything one read of a connection brings (up to 64 KiB: a thousand and
// more pipelined requests) and hands every request over at once, in the same turn of the
// event loop. Handled as they come, one pipelining client fills whole turns with its
// requests while another client's single request waits for the next turn, and the next; and
// when the answers take a while (a limiter kept in Redis, the store), node goes on reading
// and keeps every parsed request until it is answered, without bound.
//
// So each connection gets, per turn of the event loop, at most PER_TURN requests handled; the
// rest of what it sent waits, in order, for the following turns, and the connection is not
// read meanwhile (other connections' reads, and every timer, come first). And a connection
// has at most MAX_OUTSTANDING requests handled but not yet answered (an answer counts until
// it has left for the network: a client that does not read its answers has them count too);
// past that it is neither read nor served until half of them are answered (a request waiting
// for the limiter's answer from Redis counts too: no connection piles up work in flight).
// What a connection can make the server hold is thus about one read of requests (64 KiB) and
// 64 answers, whatever it sends; and over all connections, MAX_QUEUED bounds what waits.
//
// A request costs a few property checks and one 'close' listener on its response.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RequestListener } from './contract.js';
import { MAX_OUTSTANDING, holdUnread, readIfFree } from './reading.js';
import { connectionOf, existingConnection, type Connection } from './state.js';

export { MAX_OUTSTANDING } from './reading.js';

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
 * The listener, taking turns: per connection at most PER_TURN requests handled per turn of
 * the event loop and MAX_OUTSTANDING unanswered at a time; the others wait, in order, with
 * the connection unread. One instance per server (the turn count is its own).
 */
export function takeTurns(listener: RequestListener): RequestListener {
  let turn = 0;
  let ticking = false;
  /** Connections with requests waiting for a turn, served round robin (a queue: `first` is its head). */
  const listed: Array<Connection | undefined> = [];
  let first = 0;
  /** Requests queued, and requests handled and not yet answered, over all connections. */
  let queuedTotal = 0;
  let outstandingTotal = 0;

  const list = (conn: Connection): void => {
    if (conn.listed) return;
    conn.listed = true;
    listed.push(conn);
    tick();
  };

  /** A turn: each listed connection in order serves its conn, until the turn's budget is spent. */
  const nextTurn = (): void => {
    ticking = false;
    turn++;
    let budget = TURN_BUDGET;
    // (Connections listed again during this turn wait for the next one.)
    const end = listed.length;
    while (first < end && budget > 0) {
      const conn = listed[first] as Connection;
      listed[first++] = undefined;
      conn.listed = false;
      budget -= serve(conn);
    }
    if (first === listed.length) {
      listed.length = 0;
      first = 0;
    } else {
      if (first > 1024) {
        listed.splice(0, first);
        first = 0;
      }
      tick();
    }
  };
  const tick = (): void => {
    if (!ticking) {
      ticking = true;
      setImmediate(nextTurn);
    }
  };

  /** Handles one request, counting it as outstanding while its answer has not gone out. */
  const handle = (conn: Connection, req: IncomingMessage, res: ServerResponse): void => {
    conn.served++;
    listener(req, res);
    // An answer counts until it has gone out (to the socket, and from it to the kernel), so
    // a client that does not read is not read either. One answered at once and already out
    // (the common case: the socket took it whole) has nothing left to wait for.
    if (res.writableFinished) return;
    conn.outstanding++;
    outstandingTotal++;
    // ('close' comes once per response: no once() wrapper needed.)
    res.on('close', onAnswered);
  };
  // ('close' follows 'finish', when the answer has gone out; or comes alone if the connection dropped.)
  function onAnswered(this: ServerResponse): void {
    const conn = existingConnection(this.req.socket);
    if (conn !== undefined) answered(conn);
  }

  /** Handles queued requests while the connection's conn allows (returns how many); lists it again if some remain. */
  const serve = (conn: Connection): number => {
    const socket = conn.socket;
    const queue = conn.queue;
    if (socket.destroyed) {
      drop(conn);
      return 0;
    }
    if (conn.turn !== turn) {
      conn.turn = turn;
      conn.served = 0;
    }
    let handled = 0;
    // (A connection with too many answers due waits for half of them: answered() lists it again.)
    while (conn.head < queue.length && conn.served < PER_TURN && conn.outstanding < MAX_OUTSTANDING) {
      const req = queue[conn.head] as IncomingMessage;
      const res = queue[conn.head + 1] as ServerResponse;
      queue[conn.head] = queue[conn.head + 1] = undefined as unknown as IncomingMessage;
      conn.head += 2;
      queuedTotal--;
      handled++;
      handle(conn, req, res);
    }
    if (conn.head >= queue.length) {
      queue.length = 0;
      conn.head = 0;
    } else if (conn.outstanding < MAX_OUTSTANDING) {
      list(conn);
    }
    readIfFree(conn);
    return handled;
  };

  /** The connection is gone: its queued requests will never be handled. */
  const drop = (conn: Connection): void => {
    queuedTotal -= (conn.queue.length - conn.head) >> 1;
    conn.queue.length = 0;
    conn.head = 0;
    outstandingTotal -= conn.outstanding;
    conn.outstanding = 0;
    conn.gone = true;
  };

  /**
   * Too many requests wait over all connections: this one, which has a deep queue of its
   * own, is closed (a client that pipelines may have to send again what was not answered,
   * as when any server closes a connection).
   */
  const tooMany = (conn: Connection): boolean => queuedTotal + outstandingTotal >= MAX_QUEUED
    && ((conn.queue.length - conn.head) >> 1) + conn.outstanding >= 2 * MAX_OUTSTANDING;

  const answered = (conn: Connection): void => {
    if (conn.gone) return;
    conn.outstanding--;
    outstandingTotal--;
    if (conn.outstanding === MAX_OUTSTANDING >> 1) {
      if (conn.queued) list(conn);
      readIfFree(conn);
    }
  };

  return (req, res) => {
    const socket = req.socket;
    // (A connection closed while node parses what it sent: node aborts the rest on close.)
    if (socket.destroyed) return;
    const conn = connectionOf(socket);
    if (!conn.taken) {
      conn.taken = true;
      // When the client goes away, what it sent and we have not handled is dropped at once
      // (not kept until its turn), and its unanswered requests no longer count.
      socket.once('close', () => drop(conn));
    }
    if (conn.turn !== turn) {
      conn.turn = turn;
      conn.served = 0;
      tick();
    }
    // A connection with nothing waiting has its first requests of the turn handled as they
    // come: a client that sends one request at a time never waits behind pipelining ones.
    if (conn.head === conn.queue.length && conn.served < PER_TURN && conn.outstanding < MAX_OUTSTANDING) {
      handle(conn, req, res);
      if (conn.outstanding >= MAX_OUTSTANDING) holdUnread(conn);
      return;
    }
    if (tooMany(conn)) {
      drop(conn);
      socket.destroy();
      return;
    }
    conn.queue.push(req, res);
    queuedTotal++;
    holdUnread(conn);
    list(conn);
  };
}
