// The head of an answer, as steps: each kind of header field an answer may carry is one step
// that appends its fields to the [name, value, ...] list send.ts writes. A route gets the
// steps it can have when the app builds its phases (OUTBOUND in outbound.ts), so a route that
// cannot carry a kind of field does not run its code (no deprecation fields but on the
// deprecated route, no rate-limit fields on a route the limiter does not charge).
import { pushLimitHeaders, type LimitResult } from '../limits/index.js';
import type { Exchange, HeadStep } from './exchange.js';

/** The deprecated route's three fields, built once per base URL by its phase. */
export const deprecationFields: HeadStep = (x, out) => {
  const deprecated = x.deprecated;
  if (deprecated === undefined) return;
  for (let i = 0; i < deprecated.length; i++) out.push(deprecated[i] as string);
};

/** The limiter's answer to this request's charge, on every answer after it. */
export const limitFields: HeadStep = (x, out) => {
  const limit: LimitResult | undefined = x.limit;
  if (limit !== undefined) pushLimitHeaders(out, limit);
};

/**
 * The fields gathered on the way (x.headers: CORS, Allow, WWW-Authenticate, Retry-After,
 * Preference-Applied, ...) and the handler's own (Location, Link, Idempotent-Replayed, a
 * fault's fields), in the order they were set. A field replaces one of the same name written
 * before it (a fault's 429 has its own X-RateLimit-Remaining and Retry-After).
 */
export const gatheredFields: HeadStep = (x, out) => {
  const headers = x.headers;
  const replied = x.replied;
  if (replied === undefined) {
    for (const key in headers) pushField(out, fieldName(key), headers[key] as string);
    return;
  }
  // The handler's fields came first (see sendReply); a field set after them replaces one of
  // the same key in its place, as when they were kept in one object.
  for (const key in replied) pushField(out, fieldName(key), (Object.hasOwn(headers, key) ? headers[key] : replied[key]) as string);
  for (const key in headers) if (!Object.hasOwn(replied, key)) pushField(out, fieldName(key), headers[key] as string);
};

export const requestIdField: HeadStep = (x, out) => {
  out.push('X-Request-Id', x.reqId);
};

/** The body's type and length (none without a body), then Cache-Control. */
export const contentFields: HeadStep = (_x, out, type, length) => {
  if (length !== undefined) out.push('Content-Type', type, 'Content-Length', String(length));
  out.push('Cache-Control', 'no-store');
};

/** Appends a field, dropping one of the same name before it (each name is in the list once at most). */
function pushField(out: string[], name: string, value: string): void {
  for (let i = 0; i < out.length; i += 2) {
    if (out[i] === name) {
      out.splice(i, 2);
      break;
    }
  }
  out.push(name, value);
}

/** Every field of an answer, as [name, value, ...] (node writes a flat list in one loop). */
export function headList(x: Exchange, type: string, length: number | undefined): string[] {
  const out: string[] = [];
  const steps = x.outbound.head;
  for (let i = 0; i < steps.length; i++) (steps[i] as HeadStep)(x, out, type, length);
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
