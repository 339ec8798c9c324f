// The one exit: every response of the service is written here.
import { JOURNAL_MAX_BODY_BYTES, type ConnectionFault } from '../admin/index.js';
import type { Reply } from '../api/index.js';
import { pushLimitHeaders } from '../limits/index.js';
import { connectionOf } from './connection/index.js';
import { boundUnreadBody, lingerAfterAnswer } from './drain.js';
import { loggedAddress } from './client-address.js';
import type { IncomingMessage } from 'node:http';
import type { Config } from '../config/index.js';
import type { Exchange, Instance } from './exchange.js';

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
  x.res.writeHead(status, headerList(x, contentType, length));
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

/** Counts and logs an answer, with one more clock reading for its duration. */
function done(app: Instance, x: Exchange, status: number): void {
  const metrics = app.metrics;
  const timed = !x.quiet && (metrics !== undefined || app.accessLog);
  if (!timed && !x.journal) return;
  // One clock reading for all: the journal, the figures and the log line give the same time.
  const elapsed = app.deps.clock.monotonic() - x.started;
  if (x.journal) record(app, x, status, elapsed);
  if (!timed) return;
  if (metrics !== undefined) metrics.request(x.operation, status, elapsed);
  if (!app.accessLog) return;
  logRequest(app, x, status, elapsed);
}

/**
 * The access log line, in pino-http's field names: req.remoteAddress, req.remotePort,
 * req.headers["user-agent"] (the one header logged: the others may carry a key), and for an
 * Error body err.type, err.code and err.message (pino's error serializer), so a 4xx says why.
 * Built from a fixed template: only the strings a client controls (or a config names) are
 * escaped, by jsonString, which also says whether any of them was not ASCII (the output's
 * fast copy is for ASCII lines); a logger without logJson (an embedder's function) gets the fields
 * as an object instead, with the same content.
 */
function logRequest(app: Instance, x: Exchange, status: number, elapsed: number): void {
  const req = x.req;
  const error = x.error;
  const logger = app.deps.logger;
  const userAgent = req.headers['user-agent'];
  if (logger.logJson === undefined) {
    const responseTime = Math.round(elapsed * 100) / 100;
    logger.log('info', 'request completed', {
      reqId: x.reqId,
      req: {
        method: req.method,
        url: req.url,
        remoteAddress: loggedAddress(req, x.config),
        remotePort: req.socket.remotePort,
        headers: userAgent === undefined ? undefined : { 'user-agent': userAgent },
      },
      res: { statusCode: status },
      err: error === undefined ? undefined : { type: 'ApiError', code: error.code, message: error.message },
      responseTime,
      key: x.keyName,
    });
    return;
  }
  sawNonAscii = false;
  // Request ids are ours or match SANE_REQUEST_ID (request.ts): nothing in them to escape.
  let line = `,"reqId":"${x.reqId}${methodField(req.method ?? '')}${jsonString(req.url ?? '')}${peerFields(req, x.config)}`;
  if (userAgent !== undefined) line += `,"headers":{"user-agent":${jsonString(userAgent)}}`;
  line += statusFields(status);
  // Error codes are ours (plain identifiers); messages may quote the client.
  if (error !== undefined) line += `,"err":{"type":"ApiError","code":"${error.code}","message":${jsonString(error.message)}}`;
  line += `,"responseTime":${hundredths(Math.round(elapsed * 100))}${keyField(x.keyName)}`;
  // The method and address fields are ASCII (a method is a token, an address digits, hex and
  // punctuation); a key name's field is remembered with its own answer.
  logger.logJson('info', 'request completed', line, !sawNonAscii && (x.keyName === undefined || lastKeyAscii));
}

/** `","req":{"method":"GET","url":` by method: a handful of strings, made once each. */
const methodFields = new Map<string, string>();

function methodField(method: string): string {
  let field = methodFields.get(method);
  if (field === undefined) {
    field = `","req":{"method":${jsonString(method)},"url":`;
    // Methods are tokens (ASCII); one that was not would not be remembered as if it were.
    if (methodFields.size < 64 && !sawNonAscii) methodFields.set(method, field);
  }
  return field;
}

/**
 * The client's address and port as log fields. The socket's are the same for every request of
 * a keep-alive connection, so they are written once per connection; an address taken from
 * X-Forwarded-For (trustProxy) can change from one request to the next and is made each time.
 */
function peerFields(req: IncomingMessage, config: Config): string {
  const socket = req.socket;
  if (config.trustProxy && req.headers['x-forwarded-for'] !== undefined) return addressFields(loggedAddress(req, config), socket.remotePort);
  const conn = connectionOf(socket);
  let fields = conn.logPeer;
  if (fields === undefined) {
    fields = addressFields(socket.remoteAddress, socket.remotePort);
    // A socket that has closed before its answer knows no address: not kept.
    if (socket.remoteAddress !== undefined) conn.logPeer = fields;
  }
  return fields;
}

function addressFields(address: string | undefined, port: number | undefined): string {
  let fields = address === undefined ? '' : `,"remoteAddress":${jsonString(address)}`;
  if (port !== undefined) fields += `,"remotePort":${port}`;
  return fields;
}

/** `},"res":{"statusCode":200}` by status, made once each. */
const statusFieldsByCode: string[] = [];

function statusFields(status: number): string {
  return (statusFieldsByCode[status] ??= `},"res":{"statusCode":${status}}`);
}

/** The last key name logged and its field: consecutive answers are mostly for one key. */
let lastKeyName: string | undefined;
let lastKeyField = '';
/** Whether lastKeyField is ASCII. */
let lastKeyAscii = true;

function keyField(name: string | undefined): string {
  if (name === undefined) return '';
  if (name !== lastKeyName) {
    const before = sawNonAscii;
    sawNonAscii = false;
    lastKeyName = name;
    lastKeyField = `,"key":${jsonString(name)}`;
    lastKeyAscii = !sawNonAscii;
    sawNonAscii = before;
  }
  return lastKeyField;
}

/**
 * A whole number of hundredths as the number JSON.stringify writes for it divided by 100
 * (1234 -> "12.34", 150 -> "1.5", 7 -> "0.07", 200 -> "2"), without converting a double: the
 * small integers involved are in V8's number-string cache.
 */
export function hundredths(h: number): string {
  if (!(h >= 0 && h < 1e15) || h !== Math.floor(h)) return String(h / 100);
  const whole = Math.floor(h / 100);
  const frac = h - whole * 100;
  if (frac === 0) return `${whole}`;
  if (frac < 10) return `${whole}.0${frac}`;
  return frac % 10 === 0 ? `${whole}.${frac / 10}` : `${whole}.${frac}`;
}

const HEX = '0123456789abcdef';

/**
 * Set by jsonString when a string had a character above U+007F (left in the text, as
 * JSON.stringify leaves it): the access line is then not all ASCII, and its output must
 * encode it as UTF-8. Cleared by logRequest before each line.
 */
let sawNonAscii = false;

/**
 * A string as JSON text, exactly as JSON.stringify writes it: quotes, backslashes and
 * control characters escaped (\n, \t, ... or \u00XX), and lone surrogates as \uXXXX.
 * The common case, nothing to escape, is one scan and one concatenation.
 */
export function jsonString(s: string): string {
  const n = s.length;
  let i = 0;
  for (; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c === 0x22 || c === 0x5c || c >= 0x80) break;
  }
  if (i === n) return `"${s}"`;
  let out = `"${s.slice(0, i)}`;
  let from = i;
  for (; i < n; i++) {
    const c = s.charCodeAt(i);
    let esc: string | undefined;
    if (c < 0x20) {
      esc = c === 0x0a ? '\\n' : c === 0x0d ? '\\r' : c === 0x09 ? '\\t' : c === 0x08 ? '\\b' : c === 0x0c ? '\\f' : `\\u00${HEX[c >> 4]}${HEX[c & 15]}`;
    } else if (c === 0x22) {
      esc = '\\"';
    } else if (c === 0x5c) {
      esc = '\\\\';
    } else if (c >= 0x80) {
      sawNonAscii = true;
      if (c < 0xd800 || c > 0xdfff) continue;
      const next = i + 1 < n ? s.charCodeAt(i + 1) : 0;
      if (c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
        i++; // a well-formed pair: written as it is
        continue;
      }
      esc = `\\u${c.toString(16)}`;
    }
    if (esc === undefined) continue;
    out += s.slice(from, i) + esc;
    from = i + 1;
  }
  return `${out}${s.slice(from)}"`;
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
    x.res.writeHead(status, headerList(x, contentType, body.length));
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

/** The journal entry of an answered /v1 request (only when the journal phase marked it). */
function record(app: Instance, x: Exchange, status: number, elapsed: number): void {
  const journal = app.deps.journal;
  if (journal === undefined) return;
  const clock = app.deps.clock;
  const req = x.req;
  let bodyJson: string | undefined;
  if (x.body !== undefined) {
    bodyJson = JSON.stringify(x.body);
    if (bodyJson.length > JOURNAL_MAX_BODY_BYTES / 3 && Buffer.byteLength(bodyJson) > JOURNAL_MAX_BODY_BYTES) bodyJson = undefined;
  }
  const key = req.headers['idempotency-key'];
  journal.record({
    requestId: x.reqId,
    at: clock.now(),
    method: req.method ?? 'GET',
    path: x.path,
    rawQuery: x.rawQuery,
    key: x.keyName ?? null,
    status,
    durationMs: Math.round(elapsed * 100) / 100,
    idempotencyKey: x.idempotencyKey ?? (typeof key === 'string' ? key : null),
    bodyJson,
  });
}
