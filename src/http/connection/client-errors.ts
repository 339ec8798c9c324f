// Requests node:http cannot parse (and CONNECT) never reach the app: they are answered here,
// on the socket node hands over, with an Error body too.
import { STATUS_CODES, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { errorBody } from '../../core/index.js';
import { answerInFlight, closesAfterHalfClose } from './node-internals.js';

/**
 * Requests node:http cannot parse never reach the app; answer them with an Error body too
 * (RFC 9112 section 9.6: close after a framing error, since the stream cannot be trusted).
 * One answer per connection: node reports the error again for every later read of it (its
 * parser stays failed), and those reports are not new requests.
 */
export function answerClientError(err: NodeJS.ErrnoException, socket: Socket): void {
  if (reported.has(socket)) return;
  reported.add(socket);
  if (!socket.writable || (err.code === 'ECONNRESET')) {
    socket.destroy();
    return;
  }
  answerAfterInFlight(err, socket);
}

/** Connections whose parse error has been seen (answered, or to be answered after the answers before it). */
const reported = new WeakSet<Socket>();
/** Connections whose parse error's answer has been written. */
const written = new WeakSet<Socket>();

/**
 * Pipelined requests before the bad one may still be answering (a create waiting for its
 * fsync): their answers go first, in order, and the 400 after them. node:http keeps the
 * response being written on the connection (answerInFlight), and moves the next queued one there when
 * it finishes (its 'finish' listeners run in order: node's, which moves the queue on, then
 * ours). If that request is itself incomplete, the error is about its own body (cut short):
 * then it is answered here and now. A client that half-closed has node close the connection
 * from that same 'finish' (after the last answer): a listener put before node's writes the
 * 400 first.
 */
function answerAfterInFlight(err: NodeJS.ErrnoException, socket: Socket): void {
  if (written.has(socket)) return;
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const inFlight = answerInFlight(socket);
  if (inFlight && inFlight.req.complete) {
    inFlight.prependOnceListener('finish', () => {
      if (closesAfterHalfClose(inFlight) && socket.writable) answerNow(err, socket);
    });
    inFlight.once('finish', () => answerAfterInFlight(err, socket));
    return;
  }
  answerNow(err, socket);
}

function answerNow(err: NodeJS.ErrnoException, socket: Socket): void {
  written.add(socket);
  let status = 400;
  let body = errorBody('invalid_request', 'The request is not valid HTTP/1.1.');
  if (err.code === 'HPE_HEADER_OVERFLOW') {
    status = 431;
    body = errorBody('request_header_fields_too_large', 'The request headers are larger than 16 KiB.');
  } else if (err.code === 'HPE_INVALID_EOF_STATE') {
    body = errorBody('invalid_request', 'The connection ended before the request body was complete.');
  } else if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    status = 408;
    body = errorBody('request_timeout', 'The request did not arrive in time.');
  }
  endWith(socket, status, body);
}

/** Writes a whole response on a socket node:http has handed over, and closes it. */
function endWith(socket: Socket, status: number, body: string, extra = ''): void {
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\nContent-Type: application/json; charset=utf-8\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\nCache-Control: no-store\r\n${extra}Connection: close\r\n\r\n${body}`,
  );
  closeAfterAnswer(socket);
}

/** How long a socket answered outside node's request cycle may stay before it is destroyed. */
const LINGER_MS = 2_000;

/**
 * end() only half-closes: the socket (and its file descriptor) stays until the client closes
 * its side, which a silent or hostile client never does. So: read and discard what it still
 * sends (unread input would turn the close into a reset that can destroy the answer before
 * the client reads it), destroy the socket once the client has closed its side, and destroy
 * it anyway LINGER_MS after the answer, whatever the client does.
 */
function closeAfterAnswer(socket: Socket): void {
  const timer = setTimeout(() => socket.destroy(), LINGER_MS);
  timer.unref();
  socket.once('close', () => clearTimeout(timer));
  socket.once('end', () => socket.destroy());
  socket.resume();
}

/**
 * CONNECT (a proxy tunnel) reaches node's 'connect' event, not the app: refuse it there.
 * node has removed its own 'error' listener from the socket by then: without one, a client
 * that resets the connection would end the process with an unhandled 'error' event.
 */
export function refuseConnect(req: IncomingMessage, socket: Socket): void {
  socket.on('error', () => socket.destroy());
  endWith(socket, 405, errorBody('method_not_allowed', 'CONNECT is not supported: this is not a proxy.'), 'Allow: GET, POST, HEAD\r\n');
}
