// Bodies nobody will read: the rest of an oversized upload before its 413, and the body of a
// request answered before it was read. Both are read and thrown away, bounded, so the client
// sees its answer instead of a connection reset.
import type { Socket } from 'node:net';
import type { Exchange } from './exchange.js';
import { holdReading, onCloseAfterAnswer } from './connection/index.js';

// After a 413 the rest of the upload is read and thrown away up to this many bytes, so the
// client sees the status instead of a connection reset; past it the connection is dropped.
export const DRAIN_CAP_BYTES = 8 * 1024 * 1024;
const DRAIN_WAIT_MS = 5_000;
// How long a closing connection keeps reading what the client still sends (see lingerAfterAnswer).
const LINGER_MS = 2_000;

/**
 * An answer given before the request's body was read (401, 404, 405, 429, a GET with a
 * body, ...): after it node reads and discards the rest of the body, however long. The
 * 413's cap holds for them too: an announced body past DRAIN_CAP_BYTES gets its answer
 * and a close; a chunked one is cut once DRAIN_CAP_BYTES have been discarded. A body within
 * the cap is still discarded, so the client reads its answer rather than a reset.
 */
export function boundUnreadBody(x: Exchange): void {
  const req = x.req;
  if (req.complete || x.headers.connection === 'close') return;
  const length = req.headers['content-length'];
  if (length !== undefined) {
    if (Number(length) > DRAIN_CAP_BYTES) x.headers.connection = 'close';
    return;
  }
  const socket = req.socket;
  let drained = 0;
  req.on('data', (chunk: Buffer) => {
    drained += chunk.length;
    if (drained > DRAIN_CAP_BYTES && drained - chunk.length <= DRAIN_CAP_BYTES) stopAndClose(socket);
  });
  req.resume();
}

/**
 * Past the cap: nothing more is read (the client's sends stop at its TCP window, costing us
 * nothing), the connection is half-closed, and it is destroyed LINGER_MS later. Destroyed at
 * once, the unread input would make the close a reset, and a client busy writing would see
 * EPIPE or ECONNRESET before it had read the answer already sent.
 */
function stopAndClose(socket: Socket): void {
  holdReading(socket);
  if (socket.writable) socket.end();
  const timer = setTimeout(() => socket.destroy(), LINGER_MS);
  timer.unref();
  socket.once('close', () => clearTimeout(timer));
}

/**
 * The rest of an oversized upload is read and thrown away before the 413 is sent: a server
 * that answers and closes while the client is still sending makes the client's kernel reset
 * the connection, and the client may never read the answer (even more so when it asked for
 * Connection: close). Past DRAIN_CAP_BYTES it answers at once and closes the connection.
 */
export function discardThen(x: Exchange, respond: () => void): void {
  const socket = x.req.socket; // req.socket is null once the request is destroyed
  let drained = 0;
  let answered = false;
  const answer = (): void => {
    if (answered) return;
    answered = true;
    clearTimeout(timer);
    respond();
  };
  // A client that stops sending mid-upload gets its answer after DRAIN_WAIT_MS all the same.
  const timer = setTimeout(() => {
    x.headers.connection = 'close';
    answer();
  }, DRAIN_WAIT_MS);
  x.req.on('data', (chunk: Buffer) => {
    drained += chunk.length;
    if (drained > DRAIN_CAP_BYTES && !answered) {
      x.headers.connection = 'close';
      answer();
    }
  });
  x.req.on('end', answer);
  x.req.on('error', () => socket.destroy());
  x.req.resume();
}

/**
 * node ends a `Connection: close` answer with socket.destroySoon(): a FIN, then the descriptor
 * closed once the answer is flushed. If the client is still sending its body, the unread input
 * turns that close into a reset, which can reach the client before it has read its answer (it
 * then sees ECONNRESET instead of the 401 or 413). So for this one socket the close lingers:
 * FIN first, then what still arrives is read and dropped until the client closes its side, for
 * at most LINGER_MS, and only then is the socket destroyed. Past DRAIN_CAP_BYTES nothing more
 * is read (the client is held by its TCP window) but the LINGER_MS still run: on a fast link
 * the cap is reached within milliseconds, and a reset then would reach a client still busy
 * sending before it had read its answer.
 */
export function lingerAfterAnswer(socket: Socket): void {
  onCloseAfterAnswer(socket, function lingeringClose(this: Socket): void {
    const start = this.bytesRead;
    if (this.writable) this.end();
    const timer = setTimeout(() => this.destroy(), LINGER_MS);
    // node's parser may read the socket natively (no 'data' events): watch the byte count.
    const watch = setInterval(() => {
      if (this.bytesRead - start > DRAIN_CAP_BYTES) {
        clearInterval(watch);
        holdReading(this);
      }
    }, 50);
    timer.unref();
    watch.unref();
    this.once('close', () => {
      clearTimeout(timer);
      clearInterval(watch);
    });
    this.once('end', () => this.destroy());
  });
}
