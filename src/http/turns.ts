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
import type { Socket } from 'node:net';
import type { RequestListener } from './exchange.js';
import { cheapAbortOnClose, holdReading, releaseReading } from './node-internals.js';

/** Requests of one connection handled per turn of the event loop. */
export const PER_TURN = 4;
/**
 * Queued requests handled per turn, over all connections (round robin). Keeps a turn short:
 * node accepts one new connection per turn, and runs timers once per turn.
 */
export const TURN_BUDGET = 64;
/** Requests of one connection handled and not yet answered, past which it is neither read nor served. */
export const MAX_OUTSTANDING = 64;

/**
 * Requests parsed and waiting for their turn, over all connections, past which a connection
 * that adds to a deep queue of its own (2 * MAX_OUTSTANDING parsed and unanswered) is closed. node parses a
 * whole read (64 KiB: up to a thousand small requests, 1.7 KB of memory each) before we see
 * any of it, so what one connection can make us hold is bounded only per read; this bounds
 * the total (about 14 MB), whatever the number of connections. A client that pipelines
 * within reason, or sends one request at a time, is never closed.
 */
export const MAX_QUEUED = 8_192;

/** One connection's share. */
class Share {
  /** req, res, req, res, ... parsed and not yet handled, in arrival order. */
  readonly queue: Array<IncomingMessage | ServerResponse> = [];
  head = 0;
  /** Handled, and the answer not yet gone out. */
  outstanding = 0;
  /** The turn `served` counts for. */
  turn = -1;
  served = 0;
  /** On the scheduler's list of connections with queued requests. */
  listed = false;
  /** The 'resume' listener that keeps a held connection unread is installed. */
  watching = false;
  /** The connection is closed: nothing of it counts any more. */
  gone = false;
  constructor(readonly socket: Socket) {}

  get queued(): boolean {
    return this.head < this.queue.length;
  }
}

interface SharedSocket extends Socket {
  petstoreShare?: Share;
}

/**
 * The listener, taking turns: per connection at most PER_TURN requests handled per turn of
 * the event loop and MAX_OUTSTANDING unanswered at a time; the others wait, in order, with
 * the connection unread. One instance per server (the turn count is its own).
 */
export function takeTurns(listener: RequestListener): RequestListener {
  let turn = 0;
  let ticking = false;
  /** Connections with requests waiting for a turn, served round robin (a queue: `first` is its head). */
  const listed: Array<Share | undefined> = [];
  let first = 0;
  /** Requests queued, and requests handled and not yet answered, over all connections. */
  let queuedTotal = 0;
  let outstandingTotal = 0;

  const list = (share: Share): void => {
    if (share.listed) return;
    share.listed = true;
    listed.push(share);
    tick();
  };

  /** A turn: each listed connection in order serves its share, until the turn's budget is spent. */
  const nextTurn = (): void => {
    ticking = false;
    turn++;
    let budget = TURN_BUDGET;
    // (Connections listed again during this turn wait for the next one.)
    const end = listed.length;
    while (first < end && budget > 0) {
      const share = listed[first] as Share;
      listed[first++] = undefined;
      share.listed = false;
      budget -= serve(share);
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
  const handle = (share: Share, req: IncomingMessage, res: ServerResponse): void => {
    share.served++;
    listener(req, res);
    // An answer counts until it has gone out (to the socket, and from it to the kernel), so
    // a client that does not read is not read either. One answered at once and already out
    // (the common case: the socket took it whole) has nothing left to wait for.
    if (res.writableFinished) return;
    share.outstanding++;
    outstandingTotal++;
    // ('close' comes once per response: no once() wrapper needed.)
    res.on('close', onAnswered);
  };
  // ('close' follows 'finish', when the answer has gone out; or comes alone if the connection dropped.)
  function onAnswered(this: ServerResponse): void {
    const share = (this.req.socket as SharedSocket | null)?.petstoreShare;
    if (share !== undefined) answered(share);
  }

  /** Handles queued requests while the connection's share allows (returns how many); lists it again if some remain. */
  const serve = (share: Share): number => {
    const socket = share.socket;
    const queue = share.queue;
    if (socket.destroyed) {
      drop(share);
      return 0;
    }
    if (share.turn !== turn) {
      share.turn = turn;
      share.served = 0;
    }
    let handled = 0;
    // (A connection with too many answers due waits for half of them: answered() lists it again.)
    while (share.head < queue.length && share.served < PER_TURN && share.outstanding < MAX_OUTSTANDING) {
      const req = queue[share.head] as IncomingMessage;
      const res = queue[share.head + 1] as ServerResponse;
      queue[share.head] = queue[share.head + 1] = undefined as unknown as IncomingMessage;
      share.head += 2;
      queuedTotal--;
      handled++;
      handle(share, req, res);
    }
    if (share.head >= queue.length) {
      queue.length = 0;
      share.head = 0;
    } else if (share.outstanding < MAX_OUTSTANDING) {
      list(share);
    }
    readIfFree(share);
    return handled;
  };

  /** The connection is gone: its queued requests will never be handled. */
  const drop = (share: Share): void => {
    queuedTotal -= (share.queue.length - share.head) >> 1;
    share.queue.length = 0;
    share.head = 0;
    outstandingTotal -= share.outstanding;
    share.outstanding = 0;
    share.gone = true;
  };

  /**
   * Too many requests wait over all connections: this one, which has a deep queue of its
   * own, is closed (a client that pipelines may have to send again what was not answered,
   * as when any server closes a connection).
   */
  const tooMany = (share: Share): boolean => queuedTotal + outstandingTotal >= MAX_QUEUED
    && ((share.queue.length - share.head) >> 1) + share.outstanding >= 2 * MAX_OUTSTANDING;

  const answered = (share: Share): void => {
    if (share.gone) return;
    share.outstanding--;
    outstandingTotal--;
    if (share.outstanding === MAX_OUTSTANDING >> 1) {
      if (share.queued) list(share);
      readIfFree(share);
    }
  };

  return (req, res) => {
    const socket = req.socket as SharedSocket;
    // (A connection closed while node parses what it sent: node aborts the rest on close.)
    if (socket.destroyed) return;
    let share = socket.petstoreShare;
    if (share === undefined) {
      const fresh = share = socket.petstoreShare = new Share(socket);
      // When the client goes away, what it sent and we have not handled is dropped at once
      // (not kept until its turn), and its unanswered requests no longer count.
      socket.once('close', () => drop(fresh));
    }
    if (share.turn !== turn) {
      share.turn = turn;
      share.served = 0;
      tick();
    }
    // A connection with nothing waiting has its first requests of the turn handled as they
    // come: a client that sends one request at a time never waits behind pipelining ones.
    if (share.head === share.queue.length && share.served < PER_TURN && share.outstanding < MAX_OUTSTANDING) {
      handle(share, req, res);
      if (share.outstanding >= MAX_OUTSTANDING) hold(share);
      return;
    }
    if (tooMany(share)) {
      drop(share);
      socket.destroy();
      return;
    }
    share.queue.push(req, res);
    queuedTotal++;
    hold(share);
    list(share);
  };
}

/** Whether the connection must stay unread: requests wait for their turn, or too many answers are due. */
function mustWait(share: Share): boolean {
  return share.queued || share.outstanding > MAX_OUTSTANDING >> 1;
}

/**
 * Stops reading the connection (as node does when its answers pile up). node resumes it once
 * its own backlog is sent: a 'resume' listener (run after node's) stops it again while this
 * connection must wait. Installed once, on the connection's first wait.
 */
function hold(share: Share): void {
  const socket = share.socket;
  if (!share.watching) {
    share.watching = true;
    socket.on('resume', () => {
      if (mustWait(share)) holdReading(socket);
    });
    // When it closes, node's clean-up of what it sent stays cheap.
    cheapAbortOnClose(socket);
  }
  holdReading(socket);
}

/** Reads the connection again once nothing of ours holds it (pipeline.ts holds it again if a POST still does). */
function readIfFree(share: Share): void {
  // (While node waits for the client to read its answers, node reads again on 'drain'.)
  if (share.watching && !mustWait(share) && !share.socket.writableNeedDrain) releaseReading(share.socket);
}
