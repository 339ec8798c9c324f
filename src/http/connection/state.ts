// One state object per connection, under one symbol on its socket: what the connection layer
// (turns.ts, pipeline.ts) and the app above (the authentication memo, the access log's peer
// fields) keep for a connection, instead of fields of their own added to node's socket.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { RequestListener } from './contract.js';

const STATE = Symbol('petstore.connection');

type StatefulSocket = Socket & { [STATE]?: Connection };

/** A connection's requests held behind the non-safe request in flight before them (pipeline.ts). */
export class Held {
  /** req, res, req, res, ... in arrival order. */
  readonly waiting: Array<IncomingMessage | ServerResponse> = [];
  /** What handles them once the request before has been answered. */
  constructor(readonly run: RequestListener) {}
}

export class Connection {
  // ---- Turns (turns.ts) ----
  /** req, res, req, res, ... parsed and not yet handled, in arrival order. */
  readonly queue: Array<IncomingMessage | ServerResponse> = [];
  head = 0;
  /** Handled, and the answer not yet gone out. */
  outstanding = 0;
  /** The turn `served` counts for (-1: turns have not seen the connection yet). */
  turn = -1;
  served = 0;
  /** On the scheduler's list of connections with queued requests. */
  listed = false;
  /** Neither served nor read until the unanswered requests over all connections fall (turns.ts). */
  waitsForTotal = false;
  /** The connection is closed: nothing of it counts any more. */
  gone = false;
  /** Turns watch the connection's close. */
  taken = false;
  /** socket.bytesRead when turns last looked, and whether the read then was large (turns.ts). */
  bytesSeen = 0;
  bigRead = false;
  /** Its last read was large: not read again until fewer requests wait over all connections (turns.ts). */
  waitsForRoom = false;

  // ---- Order behind non-safe requests (pipeline.ts) ----
  /** Set while a request of this connection holds those behind it; else undefined. */
  held: Held | undefined = undefined;
  /** Kept for the connection's next holding request (one allocation per connection). */
  heldSpare: Held | undefined = undefined;

  // ---- Both: the 'resume' listener that keeps a held connection unread is installed ----
  watching = false;

  // ---- The app's memos ----
  /** The authentication of the connection's last Authorization value (auth.ts). */
  auth: unknown = undefined;
  /** The connection's address and port as access-log fields, made on its first logged answer. */
  logPeer: string | undefined = undefined;

  constructor(readonly socket: Socket) {}

  /** Requests parsed and waiting for their turn. */
  get queued(): boolean {
    return this.head < this.queue.length;
  }
}

/** The connection's state, made on first use. */
export function connectionOf(socket: Socket): Connection {
  const s = socket as StatefulSocket;
  return (s[STATE] ??= new Connection(socket));
}

/** The connection's state if any layer has made it. */
export function existingConnection(socket: Socket | null): Connection | undefined {
  return socket === null ? undefined : (socket as StatefulSocket)[STATE];
}
