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
// Answers that wait on something outside the process (a limiter kept in Redis) come back in
// bursts: one Redis reply answers every request of a script run at once, and each of them then
// runs to its answer before anything else, so what a flood has in flight is what another
// client's request waits behind. So over all connections at most MAX_OUTSTANDING_TOTAL
// requests are handled and not yet answered, besides PER_TURN per connection: a connection
// with that many of its own in flight is neither served nor read while the total is at the
// bound, and both again once it has fallen to three quarters, in the order they stopped (or at
// once when its own fall below PER_TURN). A client with a request or two in flight is served
// at once, whatever the others have in flight, and waits behind one bounded burst at most.
//
// What a flood makes node parse only to be thrown away is bounded too (see NEW_PER_TURN and
// NEAR_MAX_QUEUED): new connections are read from the next turn, a few a turn; near the cap a
// burst's requests wait for their turn, so that a connection closed at the cap has nothing in
// flight that keeps its parsed read alive; and connections that pipeline large reads are not
// read again until fewer requests wait.
//
// A turn is counted without a callback in every turn of the event loop (a setImmediate a turn
// cost, at one request per turn, as many instructions as the rest of that request's own code):
// a connection's count starts afresh once a turn of the round robin has run (scheduled only
// while requests wait) or once the read that brought its PER_TURN-th request is over (one
// process.nextTick then). A client sending one request at a time is never queued; a pipelining
// one has at most PER_TURN handled per read, the rest queued for the round robin.
//
// A request costs a few property checks, and one 'close' listener on a response not out at once.
// The bounds are in bounds.ts.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { RequestListener, TurnsListener } from './contract.js';
import { holdReading, releaseReading } from './node-internals.js';
import { MAX_OUTSTANDING, holdUnread, mustStayUnread, readIfFree } from './reading.js';
import { connectionOf, existingConnection, type Connection } from './state.js';
import { WaitingRoom } from './waiting-room.js';
import { BIG_READ, MAX_OUTSTANDING_TOTAL, MAX_QUEUED, NEAR_MAX_QUEUED, NEW_PER_TURN, PER_TURN, RESUME_TOTAL, TURN_BUDGET } from './bounds.js';

export { MAX_OUTSTANDING } from './reading.js';

/**
 * The listener, taking turns: per connection at most PER_TURN requests handled per read (or
 * per turn of the round robin) and MAX_OUTSTANDING unanswered at a time; the others wait, in order, with
 * the connection unread. One instance per server (the turn count is its own).
 */
export function takeTurns(listener: RequestListener): TurnsListener {
  let turn = 0;
  let ticking = false;
  /** Connections waiting, unread, for room (see admitWaiting). */
  const room = new WaitingRoom();
  /** New connections let read since the last turn. */
  let admitted = 0;
  /** Connections with requests waiting for a turn, served round robin (a queue: `first` is its head). */
  const listed: Array<Connection | undefined> = [];
  let first = 0;
  /** Requests queued, and requests handled and not yet answered, over all connections. */
  let queuedTotal = 0;
  let outstandingTotal = 0;
  /** Connections stopped by MAX_OUTSTANDING_TOTAL, in the order they stopped. */
  const waitingForTotal = new Set<Connection>();

  /** Whether the connection may have one more request handled now. */
  const mayServe = (conn: Connection): boolean => conn.outstanding < MAX_OUTSTANDING
    && (outstandingTotal < MAX_OUTSTANDING_TOTAL || conn.outstanding < PER_TURN);

  /** The total is at its bound and the connection has its share in flight: it waits (unread). */
  const waitForTotal = (conn: Connection): void => {
    if (conn.waitsForTotal) return;
    conn.waitsForTotal = true;
    waitingForTotal.add(conn);
    holdUnread(conn);
  };
  /** The connection goes on: listed when requests of it wait, read when nothing else holds it. */
  const goOn = (conn: Connection): void => {
    conn.waitsForTotal = false;
    waitingForTotal.delete(conn);
    if (conn.queued) list(conn);
    readAgain(conn);
  };
  /** Every connection stopped by the total goes on, in order, once it has fallen far enough. */
  const totalFell = (): void => {
    if (outstandingTotal > RESUME_TOTAL) return;
    for (const conn of [...waitingForTotal]) if (conn.waitsForTotal) goOn(conn);
  };

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
    admitted = 0;
    if (room.size > 0) admitWaiting();
    let budget = TURN_BUDGET;
    // (Connections listed again during this turn wait for the next one.)
    const end = listed.length;
    while (first < end && budget > 0) {
      const conn = listed[first];
      listed[first++] = undefined;
      if (conn === undefined) continue;
      conn.listed = false;
      budget -= serve(conn);
    }
    // (Connections served in this turn start their next read with a fresh count.)
    turn++;
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
    // (New connections stopped by the total: the requests served this turn may have made room.)
    if (room.size > 0 && roomForNew()) tick();
  };
  /** Whether a new connection may be read now (besides NEW_PER_TURN a turn). */
  const roomForNew = (): boolean => queuedTotal + outstandingTotal < NEAR_MAX_QUEUED;

  /**
   * Connections waiting for room are read (new ones newest first, then the others oldest
   * first), NEW_PER_TURN a turn, while the requests waiting over all connections are below
   * NEAR_MAX_QUEUED. Until then, one new connection a turn, and no pipelining one: reading
   * them would mostly parse requests to be thrown away with a connection closed at MAX_QUEUED,
   * which a flood then opens again.
   */
  const admitWaiting = (): void => {
    while (admitted < NEW_PER_TURN && roomForNew()) {
      const socket = room.next();
      if (socket === undefined) break;
      admitted++;
      const conn = existingConnection(socket);
      if (conn?.waitsForRoom === true) {
        conn.waitsForRoom = false;
        readIfFree(conn);
      } else releaseReading(socket);
    }
    // Without room, still one new connection a turn (the newest): a newcomer is never kept
    // waiting for a total that a pipelining flood keeps high.
    if (admitted === 0) {
      const socket = room.next(true);
      if (socket !== undefined) {
        admitted++;
        releaseReading(socket);
      }
    }
    // More next turn (those stopped by the total wait for it to fall: answered()).
    if (room.newOnes > 0 || (room.size > 0 && roomForNew())) tick();
  };
  /** The connection waits, unread, for room (see admitWaiting). */
  const waitForRoom = (socket: Socket, again: boolean): void => {
    room.add(socket, again);
    if (!again || roomForNew()) tick();
  };
  /**
   * A connection with nothing more to serve now is read again, unless its last read was large
   * and half the cap waits: then it waits for room like a new connection.
   */
  const readAgain = (conn: Connection): void => {
    if (conn.bigRead && (!roomForNew() || room.size > 0) && conn.watching && !mustStayUnread(conn)) {
      conn.waitsForRoom = true;
      holdUnread(conn);
      waitForRoom(conn.socket, true);
      return;
    }
    readIfFree(conn);
  };

  const tick = (): void => {
    if (!ticking) {
      ticking = true;
      setImmediate(nextTurn);
    }
  };
  /** The read being handled is over once its callback returns: counts start afresh after it. */
  let readEnding = false;
  const endRead = (): void => {
    readEnding = false;
    turn++;
  };
  const endReadSoon = (): void => {
    if (!readEnding) {
      readEnding = true;
      process.nextTick(endRead);
    }
  };

  /** Handles one request, counting it as outstanding while its answer has not gone out. */
  const handle = (conn: Connection, req: IncomingMessage, res: ServerResponse): void => {
    conn.served++;
    listener(req, res);
    // An answer counts until it has gone out (to the socket, and from it to the kernel), so
    // a client that does not read is not read either. One answered at once and already out
    // (the common case: the socket took it whole) has nothing left to wait for. (Not
    // res.writableFinished: from node 24 on it turns true only once the write's callback has
    // run, a tick later, so every answer would count, with a 'close' listener each.)
    if (res.writableEnded && res.writableLength === 0) return;
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
    // (A connection with too many answers due waits for half of them, or for the total to fall:
    // answered() lists it again.)
    while (conn.head < queue.length && conn.served < PER_TURN && mayServe(conn)) {
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
    }
    if (!mayServe(conn)) {
      if (conn.outstanding < MAX_OUTSTANDING) waitForTotal(conn);
    } else if (conn.queued) {
      list(conn);
    }
    readAgain(conn);
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
    if (conn.listed) {
      conn.listed = false;
      const at = listed.indexOf(conn, first);
      if (at >= 0) listed[at] = undefined;
    }
    if (conn.waitsForTotal) {
      conn.waitsForTotal = false;
      waitingForTotal.delete(conn);
    }
    if (waitingForTotal.size > 0) totalFell();
    if (room.size > 0 && !ticking && roomForNew()) tick();
  };

  /**
   * Too many requests wait over all connections: this one, which has a deep queue of its
   * own, is closed (a client that pipelines may have to send again what was not answered,
   * as when any server closes a connection).
   */
  const tooMany = (conn: Connection): boolean => queuedTotal + outstandingTotal >= MAX_QUEUED
    && ((conn.queue.length - conn.head) >> 1) + conn.outstanding >= 2 * MAX_OUTSTANDING;

  /**
   * Whether the request now parsed came in a read of more than BIG_READ bytes: node has read
   * it whole before the first of its requests comes (socket.bytesRead counts it all).
   * Looked at for queued requests and, near the bound, for the others, so bytesSeen may be
   * older than the connection's last read: then the reads since count as one (a request of a
   * client that sent more than BIG_READ since waits for its turn once).
   */
  const inBigRead = (conn: Connection): boolean => {
    const read = conn.socket.bytesRead;
    if (read !== conn.bytesSeen) {
      conn.bigRead = read - conn.bytesSeen > BIG_READ;
      conn.bytesSeen = read;
    }
    return conn.bigRead;
  };

  const answered = (conn: Connection): void => {
    if (conn.gone) return;
    conn.outstanding--;
    outstandingTotal--;
    if (room.size > 0 && !ticking && roomForNew()) tick();
    if (conn.waitsForTotal && conn.outstanding < PER_TURN) goOn(conn);
    else if (conn.outstanding <= MAX_OUTSTANDING >> 1) {
      if (conn.outstanding === MAX_OUTSTANDING >> 1 && conn.queued && !conn.waitsForTotal) list(conn);
      // (At every answer from there down, not only at half: what else held the connection, the
      // requests behind a non-safe one, may have run meanwhile. Cheap when nothing holds it.)
      readAgain(conn);
    }
    if (waitingForTotal.size > 0) totalFell();
  };

  const turns = (req: IncomingMessage, res: ServerResponse): void => {
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
    }
    // A connection with nothing waiting has its first requests of the turn handled as they
    // come: a client that sends one request at a time never waits behind pipelining ones.
    if (conn.head === conn.queue.length && conn.served < PER_TURN && mayServe(conn)
      && (queuedTotal + outstandingTotal < NEAR_MAX_QUEUED || !inBigRead(conn))) {
      handle(conn, req, res);
      // (Its share is spent: the next request of this read waits; the next read starts afresh.)
      if (conn.served === PER_TURN) endReadSoon();
      if (conn.outstanding >= MAX_OUTSTANDING) holdUnread(conn);
      else if (!mayServe(conn)) waitForTotal(conn);
      return;
    }
    if (tooMany(conn)) {
      drop(conn);
      socket.destroy();
      return;
    }
    // (What the connection's read brought decides whether it may be read again while half the
    // cap waits: readAgain.)
    inBigRead(conn);
    conn.queue.push(req, res);
    queuedTotal++;
    holdUnread(conn);
    list(conn);
  };

  /**
   * A new connection (node:http's 'connection' event) is not read before the next turn:
   * connections accepted in one turn would all be read in the loop's next poll, their reads
   * parsed one after the other before anything else runs (a flood's hundred connections at
   * once: a hundred thousand requests alive together for a second).
   */
  const admit = (socket: Socket): void => {
    holdReading(socket);
    waitForRoom(socket, false);
  };

  return Object.assign(turns, { admit });
}
