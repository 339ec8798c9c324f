// The head of an answer, as steps: each kind of header field an answer may carry is one step
// that appends its fields to the [name, value, ...] list send.ts writes. A route gets the
// steps it can have when the app builds its phases (OUTBOUND in outbound.ts), so a route that
// cannot carry a kind of field does not run its code (no deprecation fields but on the
// deprecated route, no rate-limit fields on a route the limiter does not charge).
import { writeLimitHeaders, type LimitResult } from '../limits/index.js';
import type { Exchange, HeadStep } from './exchange.js';

/** The deprecated route's three fields, built once per base URL by its phase. */
export const deprecationFields: HeadStep = (x, out, n) => {
  const deprecated = x.deprecated;
  if (deprecated === undefined) return n;
  for (let i = 0; i < deprecated.length; i++) out[n++] = deprecated[i] as string;
  return n;
};

/** The limiter's answer to this request's charge, on every answer after it. */
export const limitFields: HeadStep = (x, out, n) => {
  const limit = x.limit;
  return limit === undefined ? n : writeLimitHeaders(out, n, limit);
};

/**
 * The fields gathered on the way (x.headers: CORS, Allow, WWW-Authenticate, Retry-After,
 * Preference-Applied, ...) and the handler's own (Location, Link, Idempotent-Replayed, a
 * fault's fields), in the order they were set. A field replaces one of the same name written
 * before it (a fault's 429 has its own X-RateLimit-Remaining and Retry-After).
 */
export const gatheredFields: HeadStep = (x, out, n) => {
  const headers = x.headers;
  const replied = x.replied;
  if (replied === undefined) {
    for (const key in headers) n = putField(out, n, fieldName(key), headers[key] as string);
    return n;
  }
  // The handler's fields came first (see sendReply); a field set after them replaces one of
  // the same key in its place, as when they were kept in one object.
  for (const key in replied) n = putField(out, n, fieldName(key), (Object.hasOwn(headers, key) ? headers[key] : replied[key]) as string);
  for (const key in headers) if (!Object.hasOwn(replied, key)) n = putField(out, n, fieldName(key), headers[key] as string);
  return n;
};

export const requestIdField: HeadStep = (x, out, n) => {
  out[n] = 'X-Request-Id';
  out[n + 1] = x.reqId;
  return n + 2;
};

/** The last body length written and its text: answers of one kind come in runs of one length. */
let lastLength = -1;
let lastLengthText = '';

function lengthText(length: number): string {
  if (length !== lastLength) {
    lastLength = length;
    lastLengthText = String(length);
  }
  return lastLengthText;
}

/** The body's type and length (none without a body), then Cache-Control. */
export const contentFields: HeadStep = (_x, out, n, type, length) => {
  if (length !== undefined) {
    out[n] = 'Content-Type';
    out[n + 1] = type;
    out[n + 2] = 'Content-Length';
    out[n + 3] = lengthText(length);
    n += 4;
  }
  out[n] = 'Cache-Control';
  out[n + 1] = 'no-store';
  return n + 2;
};

/** Writes a field at `n`, dropping one of the same name before it (each name is in the list once at most). */
function putField(out: string[], n: number, name: string, value: string): number {
  for (let i = 0; i < n; i += 2) {
    if (out[i] === name) {
      for (let j = i + 2; j < n; j++) out[j - 2] = out[j] as string;
      n -= 2;
      break;
    }
  }
  out[n] = name;
  out[n + 1] = value;
  return n + 2;
}

/**
 * The one list every other head is written into: node turns it into the head's text within
 * writeHead and keeps nothing of it, so it is reused, answer after answer, at the size the
 * last one had (no array is made or grown per answer). Whoever keeps an answer's fields (the
 * journal) keeps a copy.
 */
const LIST: string[] = [];

/**
 * Every field of an answer, as [name, value, ...] (node writes a flat list in one loop): valid
 * until the next call. A plain answer (a body, nothing gathered on the way, no refusal: most
 * answers) is its route's last plain head with the values that change from one request to the next
 * written in place (see HeadTemplate); any other is written by the route's steps.
 */
export function headList(x: Exchange, type: string, length: number | undefined): string[] {
  if (length !== undefined && isEmpty(x.headers)) {
    const limit = x.limit;
    if (limit === undefined || limit.outcome === 'ok') return x.outbound.template.head(x, type, length, limit);
  }
  return writeSteps(x, LIST, type, length);
}

function writeSteps(x: Exchange, out: string[], type: string, length: number | undefined): string[] {
  let n = 0;
  const steps = x.outbound.head;
  for (let i = 0; i < steps.length; i++) n = (steps[i] as HeadStep)(x, out, n, type, length);
  if (out.length !== n) out.length = n;
  return out;
}

export function isEmpty(fields: Readonly<Record<string, string>>): boolean {
  for (const _ in fields) return false;
  return true;
}

/**
 * A route's last plain head, kept to be written again. Its steps make a plain answer's fields
 * from the deprecation fields (one list per base URL), the charge's result, the handler's own
 * fields (Reply.headers), the content type, the body's length and the request id, and nothing
 * else (an answer with more is not plain: see headList). Of these, the deprecation list, the
 * policy and limit strings of the charge, the handler's fields (a cached page's Link comes as
 * the same object) and the type are the same for answer after answer of one route to one
 * client; when they are, the last head is kept and only the request id, the length and the
 * charge's changing values (Remaining, Reset, RateLimit) are written into their places.
 * Otherwise the steps write it afresh, and the places are found again by name.
 */
export class HeadTemplate {
  readonly #list: string[] = [];
  #built = false;
  #deprecated: readonly string[] | undefined = undefined;
  #type = '';
  #replied: Readonly<Record<string, string>> | undefined = undefined;
  /**
   * The charge's result whose values are in place (undefined: the head has no rate-limit
   * fields). Its policy and limit strings are those the head was built with: a result is
   * written in place only when they are the same.
   */
  #result: LimitResult | undefined = undefined;
  #remaining = -1;
  #reset = -1;
  #rateLimit = -1;
  #id = -1;
  #length = -1;

  head(x: Exchange, type: string, length: number, limit: LimitResult | undefined): string[] {
    const list = this.#list;
    const last = this.#result;
    if (
      this.#built && this.#deprecated === x.deprecated && this.#replied === x.replied && this.#type === type
      && (limit === last || (limit !== undefined && last !== undefined && limit.policy === last.policy && limit.limit === last.limit))
    ) {
      if (limit !== last && limit !== undefined) {
        list[this.#remaining] = limit.remaining;
        list[this.#reset] = limit.reset;
        list[this.#rateLimit] = limit.rateLimit;
        this.#result = limit;
      }
      list[this.#id] = x.reqId;
      list[this.#length] = lengthText(length);
      return list;
    }
    writeSteps(x, list, type, length);
    this.#built = true;
    this.#deprecated = x.deprecated;
    this.#type = type;
    this.#replied = x.replied;
    this.#result = limit;
    this.#remaining = valueAt(list, 'X-RateLimit-Remaining');
    this.#reset = valueAt(list, 'X-RateLimit-Reset');
    this.#rateLimit = valueAt(list, 'RateLimit');
    this.#id = valueAt(list, 'X-Request-Id');
    this.#length = valueAt(list, 'Content-Length');
    // A route whose steps write no such field (a charge without its fields) is not kept.
    if (this.#id < 0 || this.#length < 0 || (limit !== undefined && (this.#remaining < 0 || this.#reset < 0 || this.#rateLimit < 0))) this.#built = false;
    return list;
  }
}

/** The index of the value of the field `name` in [name, value, ...], -1 if there is none. */
function valueAt(list: readonly string[], name: string): number {
  for (let i = 0; i < list.length; i += 2) if (list[i] === name) return i + 1;
  return -1;
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
