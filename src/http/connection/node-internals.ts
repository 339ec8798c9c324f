// The one file that touches node:http's private state. Everything else in src/ uses public
// APIs only; test/http/connection/node-internals.test.ts checks, on the Node it runs on, that each field
// below still exists and behaves as used here, and fails loudly (naming the field) when a
// Node release changes it.
//
// What is used, and why no public API does the job:
// - socket._paused (lib/_http_server.js): node's own "stop reading this connection" flag. Its
//   'resume' listener (onSocketResume) pauses the socket again while it is set, and node
//   clears it, resuming the socket and its parser, once its backlog of answers has drained
//   (socketOnDrain). A plain socket.pause() is undone by node as soon as any request of the
//   connection is read or dumped (IncomingMessage's readStart resumes the socket unless
//   _paused is set), so holding pipelined requests needs the flag.
// - socket.parser.resume(): the parser of the connection, paused by node with the socket;
//   reading again (after held requests have run) must resume both, as socketOnDrain does.
// - server.httpAllowHalfOpen (lib/_http_server.js, set false by the Server constructor, no
//   createServer option): what node does when a client half-closes (sends its requests, then
//   FIN, still reading). False, node ends the socket's writable side at the FIN: the answers
//   of requests still running (a create waiting for its fsync, requests held behind it) can
//   no longer be written, so a create is stored whose 201 never leaves. True, node marks the
//   connection's last answer and closes after it (socketOnEnd, resOnFinish), or ends at once
//   when nothing is pending. A 'connection' listener cannot do this with public APIs: node's
//   own 'end' listener runs first and calls socket.end() itself.
// - res._last and res._header (lib/_http_outgoing.js): node closes the connection after an
//   answer with _last set, from the answer's 'finish' (resOnFinish); after a half-close it
//   sets _last on the connection's last answer without a Connection: close in its header
//   (_header, the head as written). The 400 of a request node could not parse, pipelined
//   behind that answer, must be written before that close (client-errors.ts).
// - socket._httpMessage (lib/_http_server.js): the answer node is writing on the connection
//   now; node moves the next queued answer there when it finishes. The 400 of a request node
//   could not parse goes after the answers of the requests before it (client-errors.ts).
// - socket.destroySoon(): what node calls to close a `Connection: close` answer's socket
//   (resOnFinish). Replaced on that one socket to linger (see drain.ts): no public hook runs
//   between the answer's last byte and the close.
import type { Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

interface HttpSocket extends Socket {
  _paused?: boolean;
  parser?: { resume(): void } | null;
}

/** Whether node:http (or holdReading) has stopped reading the connection. */
export function readingHeld(socket: Socket): boolean {
  return (socket as HttpSocket)._paused === true;
}

/** Stops reading the connection the way node:http does when answers pile up. */
export function holdReading(socket: Socket): void {
  (socket as HttpSocket)._paused = true;
  socket.pause();
}

/** Reads the connection again, as node's socketOnDrain does (no-op when not held or gone). */
export function releaseReading(socket: Socket): void {
  const s = socket as HttpSocket;
  if (s.destroyed || s._paused !== true) return;
  s._paused = false;
  s.parser?.resume();
  s.resume();
}

/** The answer node:http is writing on this connection now (the first not yet finished), if any. */
export function answerInFlight(socket: Socket): ServerResponse | undefined {
  return (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage ?? undefined;
}

/** Replaces what node does to close this socket after a `Connection: close` answer. */
export function onCloseAfterAnswer(socket: Socket, close: (this: Socket) => void): void {
  socket.destroySoon = close;
}

/**
 * A client that half-closes the connection is answered all the same: every request it sent,
 * in order, then node closes the connection after the last answer.
 */
export function answerAfterHalfClose(server: Server): void {
  (server as Server & { httpAllowHalfOpen?: boolean }).httpAllowHalfOpen = true;
}

/** Whether answerAfterHalfClose is in effect on this server (false on a plain node:http one). */
export function answersAfterHalfClose(server: Server): boolean {
  return (server as Server & { httpAllowHalfOpen?: unknown }).httpAllowHalfOpen === true;
}

/**
 * Whether node will close the connection right after this finished answer because the
 * client half-closed (and not because the answer itself said Connection: close).
 */
export function closesAfterHalfClose(res: ServerResponse): boolean {
  const r = res as ServerResponse & { _last?: unknown; _header?: unknown };
  return r._last === true && typeof r._header === 'string' && !/\r\nconnection:[ \t]*close\r\n/i.test(r._header);
}

/**
 * node:http, when a connection closes, destroys every request of it parsed and not yet
 * answered, each with a new ECONNRESET Error carrying a stack trace (abortIncoming, in the
 * socket's 'close' listener). A pipelining client can leave a thousand and more parsed
 * requests per connection: 200 such connections closing at once cost the event loop seconds
 * of stack traces nobody reads. So on a connection that queues requests, the stack trace
 * limit is 0 while the socket's 'close' listeners run: a listener put first sets it, one put
 * last restores it (listeners run in order, synchronously; a nesting count keeps the value
 * to restore right if a close runs within another).
 */
export function cheapAbortOnClose(socket: Socket): void {
  socket.prependListener('close', muteStacks);
  socket.on('close', restoreStacks);
}

let muted = 0;
let savedLimit: number | undefined;

function muteStacks(): void {
  if (muted++ === 0) savedLimit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
}

function restoreStacks(): void {
  if (muted === 0) return;
  if (--muted === 0 && savedLimit !== undefined) Error.stackTraceLimit = savedLimit;
}
