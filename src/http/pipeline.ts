// Pipelined requests behind a non-safe one. node:http emits every request it has parsed at
// once, without waiting for the answer to the one before; RFC 9112 section 9.3.2 allows that
// only when they all have safe methods. Behind a POST, a GET of the pet it creates would be
// answered 404 after its 201. So a request that arrives on a connection while a non-safe
// request of that connection is being answered waits until that answer has finished.
//
// Holding requests must not undo node's own backpressure. node stops reading a connection
// (see node-internals.ts) once the answers it has not yet sent pass the socket's high-water
// mark; held requests have no answer yet, so node would read on and on, and then answer them
// all at once. So a connection that holds requests is paused the same way, and stays paused
// until they have run: the requests already parsed (at most one read, 64 KiB) wait, and the
// rest stay in the kernel's buffers, which push back on the client.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { RequestListener } from './exchange.js';
import { holdReading, readingHeld, releaseReading } from './node-internals.js';

/** A connection's requests waiting for the non-safe request in flight before them. */
class Held {
  /** req, res, req, res, ... in arrival order. */
  readonly waiting: Array<IncomingMessage | ServerResponse> = [];
  constructor(readonly run: RequestListener) {}
}

interface PipelinedSocket extends Socket {
  /** Set while a non-safe request of this connection is being answered; else undefined. */
  petstoreHeld?: Held | undefined;
  /** Kept for the connection's next non-safe request (one allocation per connection). */
  petstoreHeldSpare?: Held;
  /** The 'resume' listener that keeps a holding connection paused is installed. */
  petstoreWatching?: boolean;
}

/**
 * The listener, ordered: a request behind a non-safe one on its connection is handled once
 * that one's response has finished. Costs a request on a connection without a non-safe
 * request in flight one property check; a non-safe request, one listener on its response.
 */
export function orderPipelined(listener: RequestListener): RequestListener {
  const ordered = (req: IncomingMessage, res: ServerResponse): void => {
    const socket = req.socket as PipelinedSocket;
    // The connection was closed on our side after an answer (a 413 or 401 with Connection:
    // close that lingers reading what the client still sends, see drain.ts): node's parser
    // still turns those bytes into requests, but no answer can reach the client any more, so
    // nothing is done for them (a create would be stored without its 201). node drops them
    // when the connection goes.
    if (socket.writableEnded) return;
    const held = socket.petstoreHeld;
    if (held !== undefined) {
      held.waiting.push(req, res);
      if (!readingHeld(socket)) stopReading(socket);
      return;
    }
    const method = req.method;
    if (method !== 'GET' && method !== 'HEAD' && method !== 'OPTIONS') {
      socket.petstoreHeld = socket.petstoreHeldSpare ??= new Held(ordered);
      res.on('close', settled);
    }
    listener(req, res);
  };
  return ordered;
}

/**
 * Stops reading a connection that holds requests, as node does when answers pile up. node
 * resumes the socket once its own backlog is sent (socketOnDrain): a 'resume' listener (a
 * public event, run after node's own) stops it again while requests are held. Installed once
 * per connection, on the first that holds (pipelining clients only).
 */
function stopReading(socket: PipelinedSocket): void {
  if (socket.petstoreWatching !== true) {
    socket.petstoreWatching = true;
    socket.on('resume', keepHolding);
  }
  holdReading(socket);
}

function keepHolding(this: PipelinedSocket): void {
  const held = this.petstoreHeld;
  if (held !== undefined && held.waiting.length > 0) holdReading(this);
}

/** Reads the connection again; node pauses it again at the next request if its answers still pile up. */
function readAgain(socket: PipelinedSocket): void {
  releaseReading(socket);
}

/**
 * The non-safe request's response is done ('close' follows 'finish', or comes alone when
 * the connection dropped). When node is closing the connection after it (Connection: close,
 * as every answer has once the server is stopping; or the client went away), the requests
 * behind would never be answered: they are not handled at all, so nothing is stored for a
 * client that never hears of it. Otherwise they run in order, until the next non-safe one
 * holds the rest again; once none is held, the connection is read again.
 */
function settled(this: ServerResponse): void {
  const socket = this.req.socket as PipelinedSocket;
  const held = socket.petstoreHeld;
  if (held === undefined) return;
  socket.petstoreHeld = undefined;
  if (held.waiting.length === 0) return;
  const waiting = held.waiting.splice(0);
  if (socket.destroyed || !socket.writable) return;
  for (let i = 0; i < waiting.length; i += 2) {
    // (run() may have set it: TypeScript cannot see that, hence the cast.)
    const again = socket.petstoreHeld as Held | undefined;
    if (again !== undefined) {
      // A non-safe request among them is in flight now: the rest wait for it, in order.
      for (let j = i; j < waiting.length; j++) again.waiting.push(waiting[j] as IncomingMessage | ServerResponse);
      // (An answer written meanwhile may have let node resume the socket.)
      if (!readingHeld(socket)) stopReading(socket);
      return;
    }
    held.run(waiting[i] as IncomingMessage, waiting[i + 1] as ServerResponse);
  }
  // (The last one run may be non-safe, holding nothing yet: its body may need the socket.)
  readAgain(socket);
}
