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
import type { OrderedListener, RequestListener } from './contract.js';
import { readingHeld, releaseReading } from './node-internals.js';
import { holdUnread, readIfFree } from './reading.js';
import { Held, connectionOf, existingConnection } from './state.js';

/**
 * The listener, ordered: a request behind a non-safe one on its connection is handled once
 * that one's response has finished (behind any request the listener asks it for). Costs a request on a connection without a non-safe request in flight one property
 * check; a non-safe request, one listener on its response.
 */
export function orderPipelined(listener: OrderedListener): RequestListener {
  const oneAtATime = listener.oneAtATime;
  const ordered = (req: IncomingMessage, res: ServerResponse): void => {
    const socket = req.socket;
    // The connection was closed on our side after an answer (a 413 or 401 with Connection:
    // close that lingers reading what the client still sends, see drain.ts; or a connection
    // broken by the test harness): node's parser still turns those bytes into requests, but
    // no answer can reach the client any more, so nothing is done for them (a create would
    // be stored without its 201). node drops them when the connection goes.
    if (socket.writableEnded || socket.destroyed) return;
    const conn = connectionOf(socket);
    const held = conn.held;
    if (held !== undefined) {
      held.waiting.push(req, res);
      if (!readingHeld(socket)) holdUnread(conn);
      return;
    }
    const method = req.method;
    if ((method !== 'GET' && method !== 'HEAD' && method !== 'OPTIONS') || (oneAtATime !== undefined && oneAtATime(req))) {
      conn.held = conn.heldSpare ??= new Held(ordered);
      res.on('close', settled);
    }
    listener(req, res);
  };
  return ordered;
}

/**
 * The holding request's response is done ('close' follows 'finish', or comes alone when
 * the connection dropped). When node is closing the connection after it (Connection: close,
 * as every answer has once the server is stopping; or the client went away; or the answer
 * broke the connection), the requests behind would never be answered: they are not handled
 * at all, so nothing is stored for a client that never hears of it. Otherwise they run in
 * order, until the next holding one holds the rest again; once none is held, the connection
 * is read again.
 */
function settled(this: ServerResponse): void {
  const conn = existingConnection(this.req.socket);
  const held = conn?.held;
  if (conn === undefined || held === undefined) return;
  conn.held = undefined;
  if (held.waiting.length === 0) {
    // Nothing was held behind it: the connection is read again unless turns still hold it.
    readIfFree(conn);
    return;
  }
  const waiting = held.waiting.splice(0);
  const socket = conn.socket;
  if (socket.destroyed || !socket.writable) return;
  for (let i = 0; i < waiting.length; i += 2) {
    const again = conn.held as Held | undefined;
    if (again !== undefined) {
      // A holding request among them is in flight now: the rest wait for it, in order.
      for (let j = i; j < waiting.length; j++) again.waiting.push(waiting[j] as IncomingMessage | ServerResponse);
      // (An answer written meanwhile may have let node resume the socket.)
      if (!readingHeld(socket)) holdUnread(conn);
      return;
    }
    held.run(waiting[i] as IncomingMessage, waiting[i + 1] as ServerResponse);
  }
  // Read again (the last one run may hold nothing yet: its body may need the socket); node
  // pauses it again at the next request if its answers still pile up, and the 'resume'
  // listener if its requests must still wait for their turn.
  releaseReading(socket);
}
