// The one exit: every response of the service is written here.
import type { ConnectionFault } from '../admin/index.js';
import type { Reply } from '../api/index.js';
import { pushLimitHeaders } from '../limits/index.js';
import { boundUnreadBody, lingerAfterAnswer } from './drain.js';
import type { AfterPhase, Exchange, Instance } from './exchange.js';
import { record } from './outbound.js';

const JSON_TYPE = 'application/json; charset=utf-8';

/** Sends a handler's reply with the headers gathered so far (or ends the connection, as it asks). */
export function sendReply(app: Instance, x: Exchange, reply: Reply): void {
  if (reply.headers !== undefined) Object.assign(x.headers, reply.headers);
  if (reply.end !== undefined) endConnection(app, x, reply.end, reply.status, reply.body, reply.contentType);
  else send(app, x, reply.status, reply.body, reply.contentType);
}

/** The one exit: every response of the service is written here, with writeHead and end once. */
export function send(app: Instance, x: Exchange, status: number, body: string | Buffer | undefined, contentType = JSON_TYPE): void {
  // A connection fault (/__admin/faults) caught this request: its answer breaks the connection.
  if (x.end !== undefined) {
    endConnection(app, x, x.end, status, body, contentType);
    return;
  }
  const rh = x.req.headers;
  if (rh['content-length'] !== undefined || rh['transfer-encoding'] !== undefined) {
    boundUnreadBody(x);
    if (x.headers.connection === 'close' && !x.req.complete) lingerAfterAnswer(x.req.socket);
  }
  const length = body === undefined ? undefined : typeof body === 'string' ? Buffer.byteLength(body) : body.length;
  const headers = headerList(x, contentType, length);
  if (x.journal) x.answer = { headers, body, type: contentType };
  x.res.writeHead(status, headers);
  x.res.end(body);
  done(app, x, status);
}

/** Removes the field `name` from a [name, value, ...] list that has each name once at most. */
function dropField(out: string[], name: string): void {
  for (let i = 0; i < out.length; i += 2) {
    if (out[i] === name) {
      out.splice(i, 2);
      return;
    }
  }
}

/**
 * Every header of an answer, as [name, value, ...] (node writes a flat list in one loop):
 * the deprecation headers, the limiter's, the others gathered on the way, then the
 * request id, the body's type and length, and Cache-Control.
 */
function headerList(x: Exchange, contentType: string, length: number | undefined): string[] {
  const out: string[] = [];
  const deprecated = x.deprecated;
  if (deprecated !== undefined) for (let i = 0; i < deprecated.length; i++) out.push(deprecated[i] as string);
  const limit = x.limit;
  if (limit !== undefined) pushLimitHeaders(out, limit);
  const headers = x.headers;
  for (const key in headers) {
    const name = fieldName(key);
    // A field set on the way replaces one of the same name above (a fault's 429 has its own
    // X-RateLimit-Remaining and Retry-After), as it did when they were one object.
    dropField(out, name);
    out.push(name, headers[key] as string);
  }
  out.push('X-Request-Id', x.reqId);
  if (length !== undefined) out.push('Content-Type', contentType, 'Content-Length', String(length));
  out.push('Cache-Control', 'no-store');
  return out;
}

/**
 * Header names are written in one case, the one the RFCs use and node writes its own in (Date,
 * Connection, Keep-Alive): each word capitalized, with the usual exceptions (WWW-Authenticate,
 * X-RateLimit-*, RateLimit). Code keeps the fields it gathers under lower-case keys (as node's
 * req.headers does); the written name is made here, once per name.
 */
const FIELD_NAMES = new Map<string, string>([
  ['www-authenticate', 'WWW-Authenticate'],
  ['x-ratelimit-limit', 'X-RateLimit-Limit'],
  ['x-ratelimit-remaining', 'X-RateLimit-Remaining'],
  ['x-ratelimit-reset', 'X-RateLimit-Reset'],
  ['ratelimit-policy', 'RateLimit-Policy'],
  ['ratelimit', 'RateLimit'],
]);

export function fieldName(key: string): string {
  let name = FIELD_NAMES.get(key);
  if (name === undefined) {
    name = key.replace(/(^|-)([a-z])/g, (_m, dash: string, c: string) => dash + c.toUpperCase());
    // (Keys are the service's own names: a handful. The bound only guards against a bug.)
    if (FIELD_NAMES.size < 256) FIELD_NAMES.set(key, name);
  }
  return name;
}

/** What the route runs after its answer (outbound.ts), with one more clock reading for its duration. */
function done(app: Instance, x: Exchange, status: number): void {
  const after = x.after;
  if (!x.journal && (x.quiet || !after.timed)) return;
  // One clock reading for all: the journal, the figures and the log line give the same time.
  const elapsed = app.deps.clock.monotonic() - x.started;
  const steps = after.steps;
  for (let i = 0; i < steps.length; i++) (steps[i] as AfterPhase)(app, x, status, elapsed);
}

/**
 * A reply that asks for a broken connection (test harnesses simulating a bad network):
 * 'reset' drops it with a TCP RST, 'empty' closes it without a byte of answer, 'truncated'
 * sends the status line, the headers (Content-Length of the whole body) and half the body,
 * then closes. Counted and logged with the reply's status, as answered.
 */
function endConnection(app: Instance, x: Exchange, end: ConnectionFault, status: number, reply: string | Buffer | undefined, contentType = JSON_TYPE): void {
  const socket = x.req.socket;
  if (end === 'reset') {
    socket.resetAndDestroy();
  } else if (end === 'empty') {
    socket.destroy();
  } else {
    const body = typeof reply === 'string' ? Buffer.from(reply) : (reply ?? Buffer.alloc(0));
    const headers = headerList(x, contentType, body.length);
    if (x.journal) x.answer = { headers, body, type: contentType };
    x.res.writeHead(status, headers);
    // The head goes out on its own (a HEAD answer has no body for write() to carry it), then
    // half the body; then the connection closes with the rest unsent.
    x.res.flushHeaders();
    x.res.write(body.subarray(0, body.length >> 1), () => socket.end());
  }
  done(app, x, status);
}

/**
 * A reset or an empty close before the request is handled (a connection fault on anything but
 * a create): nothing is answered, so nothing is counted or logged as an answer; the journal
 * records it with status 0.
 */
export function breakConnection(app: Instance, x: Exchange, end: 'reset' | 'empty'): void {
  const socket = x.req.socket;
  if (end === 'reset') socket.resetAndDestroy();
  else socket.destroy();
  if (x.journal) record(app, x, 0, app.deps.clock.monotonic() - x.started);
}
