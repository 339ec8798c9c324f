// Request metadata: the version and Host checks of RFC 9112, the request target's origin form,
// the request id, and the public base URL of links.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Config } from '../config/index.js';
import { ApiError } from '../core/index.js';
import type { Exchange, Instance } from './exchange.js';
import { isSaneHost, proxiedOrigin } from './forwarded.js';

// A client-sent request id is echoed only when it is short and plain, so logs stay clean.
const SANE_REQUEST_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/;

/**
 * Header fields whose misuse makes the request ambiguous, answered 400 (the caller has checked
 * the major version is 1):
 * - RFC 9112 section 3.2: an HTTP/1.1 request without a Host header field, or with more than
 *   one. (node:http checks the first itself unless requireHostHeader is off, but answers
 *   without an Error body.)
 * - Authorization more than once (a singleton field, RFC 9110 section 11.6.2): node keeps
 *   the first, and a proxy in front may have authorized the last.
 * - RFC 9112 section 6.1: Transfer-Encoding in HTTP/1.0 is faulty framing, and the
 *   connection closes (node's parser would frame the body as chunked all the same).
 */
export function checkRequestFields(req: IncomingMessage): ApiError | undefined {
  const http10 = req.httpVersionMinor === 0;
  if (!http10 && req.headers.host === undefined) return new ApiError('invalid_request', 'The Host header is required in HTTP/1.1.');
  const raw = req.rawHeaders;
  let hosts = 0;
  let authorizations = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    if (isHost(name)) {
      if (++hosts > 1 && !http10) return new ApiError('invalid_request', 'The Host header must be given only once.');
    } else if (isAuthorization(name) && ++authorizations > 1) {
      return new ApiError('invalid_request', 'The Authorization header must be given only once.');
    }
  }
  if (http10 && req.headers['transfer-encoding'] !== undefined) {
    return new ApiError('invalid_request', 'Transfer-Encoding is not allowed in an HTTP/1.0 request (RFC 9112 section 6.1).', { connection: 'close' });
  }
  return undefined;
}

/** Case-insensitive "authorization", as isHost. */
function isAuthorization(name: string): boolean {
  return name.length === 13 && (name === 'Authorization' || name === 'authorization' || name.toLowerCase() === 'authorization');
}

/** Case-insensitive "host" without allocating a lowercased copy (this runs on every request). */
export function isHost(name: string): boolean {
  return name.length === 4 && (name === 'Host' || name === 'host' || name.toLowerCase() === 'host');
}

/**
 * llhttp accepts the versions 0.9, 1.0, 1.1 and 2.0 in a request line and node:http would serve
 * them all as HTTP/1.1. HTTP/2 is never named in a request line (RFC 9113 section 3: it
 * starts with a preface, after ALPN or prior knowledge), and an HTTP/0.9 request has no version:
 * both are malformed HTTP/1.x. The connection closes: its framing cannot be trusted.
 */
export function unsupportedVersion(x: Exchange): ApiError {
  x.headers.connection = 'close';
  return new ApiError('invalid_request', `HTTP/${x.req.httpVersion} is not supported: this server speaks HTTP/1.1 and HTTP/1.0.`);
}

/** '/', the first character of an origin-form request target. */
export const SLASH = 47;
const ABSOLUTE_FORM = /^https?:\/\/[^/?#]*/i;

/**
 * The origin-form (path and query) of a request target in absolute-form, which node:http
 * passes on as it is; any other target is returned unchanged (and matches no route). The
 * base URL of links still comes from Host, which a client must send identical to the
 * target's authority (RFC 9112 section 3.2).
 */
export function originForm(target: string): string {
  const authority = ABSOLUTE_FORM.exec(target);
  if (authority === null) return target;
  const rest = target.slice(authority[0].length);
  return rest === '' || rest.charCodeAt(0) !== SLASH ? `/${rest}` : rest;
}

export function requestId(req: IncomingMessage, next: () => string): string {
  const given = req.headers['x-request-id'];
  return typeof given === 'string' && SANE_REQUEST_ID.test(given) ? given : next();
}

/**
 * Request ids: a random prefix per app instance and a counter, unique across restarts and
 * instances without the cost of a UUID per request. The counter starts at 1 (`first`: where
 * a test wants it).
 */
export function requestIds(first = 1): () => string {
  const prefix = `${randomUUID().slice(0, 8)}-`;
  // The counter in base 36 is its high digits, remade once every 1,296 ids, and its last two
  // from a table: Number#toString(36) per request was half a microsecond's worth of
  // instructions, as much as the rest of making the answer's head. The text is the same.
  let high = Math.floor((first - 1) / LOW_COUNT);
  let low = (first - 1) % LOW_COUNT;
  let head = prefix;
  // From 13 characters on (two to four high digits), the id is written character by
  // character: `+` would make a chain of two parts rather than one string, which node's check
  // of the header value copies into one first (a call into the runtime per answer), and
  // Array#join is a call into the runtime of its own. String.fromCharCode with one argument
  // per character makes the flat string at once. The prefix's codes are fixed; the high
  // digits' change with the head.
  const code = (i: number): number => prefix.charCodeAt(i);
  const p0 = code(0), p1 = code(1), p2 = code(2), p3 = code(3), p4 = code(4), p5 = code(5), p6 = code(6), p7 = code(7), p8 = code(8);
  let digits = 0;
  let d0 = 0, d1 = 0, d2 = 0, d3 = 0;
  const highDigits = (): void => {
    const text = high.toString(36);
    head = prefix + text;
    digits = text.length;
    d0 = text.charCodeAt(0);
    d1 = text.charCodeAt(1);
    d2 = text.charCodeAt(2);
    d3 = text.charCodeAt(3);
  };
  if (high > 0) highDigits();
  return () => {
    if (++low === LOW_COUNT) {
      low = 0;
      high++;
      highDigits();
    }
    if (high === 0) return head + (LOW_SHORT[low] as string);
    const a = LOW_FIRST[low] as number;
    const b = LOW_SECOND[low] as number;
    switch (digits) {
      case 1: return head + (LOW_PADDED[low] as string);
      case 2: return fromCharCode(p0, p1, p2, p3, p4, p5, p6, p7, p8, d0, d1, a, b);
      case 3: return fromCharCode(p0, p1, p2, p3, p4, p5, p6, p7, p8, d0, d1, d2, a, b);
      case 4: return fromCharCode(p0, p1, p2, p3, p4, p5, p6, p7, p8, d0, d1, d2, d3, a, b);
      // (Past 2,176,782,336 ids.)
      default: return [head, LOW_PADDED[low]].join('');
    }
  };
}
const fromCharCode = String.fromCharCode;

/** Two base-36 digits: 0 to 1,295, as toString(36) writes them alone and after higher digits. */
const LOW_COUNT = 36 * 36;
const LOW_SHORT: readonly string[] = Array.from({ length: LOW_COUNT }, (_, i) => i.toString(36));
const LOW_PADDED: readonly string[] = LOW_SHORT.map((text) => text.padStart(2, '0'));
/** The character codes of LOW_PADDED's two digits. */
const LOW_FIRST: readonly number[] = LOW_PADDED.map((text) => text.charCodeAt(0));
const LOW_SECOND: readonly number[] = LOW_PADDED.map((text) => text.charCodeAt(1));

/** The public base URL of a request's links (call it through lifecycle.ts's baseOf: once a request). */
export function base(app: Instance, req: IncomingMessage, config: Config): string {
  const fixed = app.deps.publicBase;
  if (fixed) return fixed;
  if (config.trustProxy) {
    const proxied = proxiedBase(req);
    if (proxied !== undefined) return proxied;
  }
  const host = req.headers.host;
  if (host !== undefined) {
    // A keep-alive client sends the same Host every time: compared with the last one first,
    // the fresh string is not hashed for the Map.
    const last = app.lastBase;
    if (last !== undefined && last.host === host) return last.base;
    const known = app.bases.get(host);
    if (known !== undefined) {
      app.lastBase = { host, base: known };
      return known;
    }
    if (isSaneHost(host)) {
      if (app.bases.size >= 64) app.bases.clear(); // Host values are client-chosen: stay bounded
      const url = `http://${host}/v1`;
      app.bases.set(host, url);
      app.lastBase = { host, base: url };
      return url;
    }
  }
  const addr = req.socket.localAddress ?? '127.0.0.1';
  return `http://${addr.includes(':') ? `[${addr}]` : addr}:${req.socket.localPort ?? 0}/v1`;
}

/**
 * Behind a trusted proxy, the base URL the client used: scheme and host from Forwarded or
 * X-Forwarded-Proto/-Host (see forwarded.ts), the Host header for what they leave out.
 * Undefined when the proxy says nothing usable.
 */
function proxiedBase(req: IncomingMessage): string | undefined {
  const origin = proxiedOrigin(req);
  if (origin === undefined) return undefined;
  const host = origin.host ?? req.headers.host;
  if (host === undefined || !isSaneHost(host)) return undefined;
  return `${origin.proto ?? 'http'}://${host}/v1`;
}
