// The access log line of an answer: one JSON line in pino-http's field names, built from a
// fixed template (see logRequest), or the same fields as an object for an embedder's logger.
import type { IncomingMessage } from 'node:http';
import type { Config } from '../config/index.js';
import { loggedAddress } from './client-address.js';
import { connectionOf } from './connection/index.js';
import type { Exchange, Instance } from './exchange.js';

/**
 * The access log line, in pino-http's field names: req.remoteAddress, req.remotePort,
 * req.headers["user-agent"] (the one header logged: the others may carry a key), and for an
 * Error body err.type, err.code and err.message (pino's error serializer), so a 4xx says why.
 * Built from a fixed template: only the strings a client controls (or a config names) are
 * escaped, by jsonString, which also says whether any of them was not ASCII (the output's
 * fast copy is for ASCII lines); a logger without logJson (an embedder's function) gets the fields
 * as an object instead, with the same content.
 */
export function logRequest(app: Instance, x: Exchange, status: number, elapsed: number): void {
  const req = x.req;
  const error = x.error;
  const logger = app.deps.logger;
  const userAgent = req.headers['user-agent'];
  // Inside a namespace the app sees the path without its /ns/{name} prefix: logged with it, as sent.
  const prefix = app.deps.pathPrefix;
  const url = prefix === undefined ? (req.url ?? '') : prefix + (req.url ?? '');
  if (logger.logJson === undefined) {
    const responseTime = Math.round(elapsed * 100) / 100;
    logger.log('info', 'request completed', {
      reqId: x.reqId,
      req: {
        method: req.method,
        url,
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
  let line = `,"reqId":"${x.reqId}${methodField(req.method ?? '')}${jsonString(url)}${peerFields(req, x.config)}`;
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
