// What a fault is, as POST /__admin/faults gives it: its fields, their bounds and their
// validation, the seeded generator behind probabilities and delay ranges, and the answer of a
// status fault. The faults as armed are in faults.ts.
import { STATUS_CODES } from 'node:http';
import { ApiError, ERROR_CODES } from '../core/index.js';

/** What a connection fault does instead of a whole answer. */
export const CONNECTION_FAULTS = ['reset', 'empty', 'truncated'] as const;
export type ConnectionFault = (typeof CONNECTION_FAULTS)[number];

export interface DelayRange {
  readonly min: number;
  readonly max: number;
}

/** Which requests of its operation a fault catches, besides the operation. */
export interface FaultMatch {
  /** A key's name in the config, null for requests without a (valid) key; undefined: any. */
  readonly key?: string | null;
  /** A request header that must have exactly this value (name in lower case); undefined: any. */
  readonly header?: { readonly name: string; readonly value: string };
}

/** A validated POST /__admin/faults body. */
export interface FaultSpec extends FaultMatch {
  /** An operationId, or "*" for every /v1 operation. */
  readonly operation: string;
  /** Answer this instead (nothing is done), 400..599; undefined when the fault does not answer. */
  readonly status: number | undefined;
  /** The body of that answer, as JSON text; undefined: the Error body of the status. */
  readonly body?: string;
  /** Headers added to that answer. */
  readonly headers?: Readonly<Record<string, string>>;
  /** Break the connection after handling the request; undefined when it does not. */
  readonly kind: ConnectionFault | undefined;
  /** Wait first: a fixed time (min = max) or a uniform range; undefined for no wait. */
  readonly delay: DelayRange | undefined;
  /** Retry-After of a status answer, in seconds (429 and 503 send 1 when none is given). */
  readonly retryAfter: number | undefined;
  /** Requests to catch, one after another (when probability is undefined). */
  readonly count: number | undefined;
  /** Chance that each matching request is caught, 0 < p <= 1, until cleared. */
  readonly probability: number | undefined;
  /** Seed of the generator behind probability and delay ranges; drawn at random when absent. */
  readonly seed: number | undefined;
}

export const MAX_FAULT_DELAY_MS = 30_000;
export const MAX_FAULT_COUNT = 1_000_000;
const MAX_RETRY_AFTER = 3600;
/** The most headers a fault adds, and the longest name or value of one. */
export const MAX_FAULT_HEADERS = 32;
const MAX_HEADER_TEXT = 1024;
/** The largest `body` of a fault, as JSON text (characters). */
export const MAX_FAULT_BODY_CHARS = 64 * 1024;
/** RFC 9110 section 5.6.2: a field name is a token. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** A field value: visible characters, spaces and tabs inside (RFC 9110 section 5.5), no CR, LF or NUL. */
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
/** Headers a fault may not set: the answer's framing and the connection are the server's. */
const FRAMING = new Set(['content-length', 'content-type', 'transfer-encoding', 'connection', 'keep-alive', 'upgrade', 'te', 'trailer', 'x-request-id']);
/** Seeds are 32-bit. */
export const MAX_SEED = 0xffff_ffff;
const FIELDS = new Set(['operation', 'status', 'kind', 'delayMs', 'count', 'probability', 'seed', 'retryAfter', 'key', 'header', 'body', 'headers']);
/** Every /v1 operation. */
export const ANY_OPERATION = '*';

/**
 * mulberry32: a small, fast 32-bit generator, plenty for spreading faults (not for secrets).
 * The same seed gives the same sequence on every run and every platform.
 */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** What a status fault (or `Prefer: code=`) answers: status, JSON body, headers. */
export interface FaultAnswer {
  readonly status: number;
  readonly body: string;
  readonly headers: Record<string, string>;
}

/**
 * The answer of a request a status fault catches: the body given with the fault, or the Error
 * body a real answer of that status would have (429 and 503 as the service's own, with
 * Retry-After), and the fault's headers. `why` says where the fault came from.
 */
export function faultAnswer(
  fault: { readonly status: number; readonly retryAfter: number | undefined; readonly body?: string; readonly headers?: Readonly<Record<string, string>> },
  why = 'fault injected through /__admin/faults',
): FaultAnswer {
  const status = fault.status;
  const retry = fault.retryAfter ?? (status === 429 || status === 503 ? 1 : undefined);
  const headers: Record<string, string> = {};
  if (retry !== undefined) headers['Retry-After'] = String(retry);
  if (status === 429) headers['X-RateLimit-Remaining'] = '0';
  let body = fault.body;
  if (body === undefined) {
    const code = errorCodeOf(status);
    const message = status === 429 ? `Rate limit exceeded; retry after ${retry} s.`
      : status === 503 ? `The service is unavailable; nothing was changed. Retry after ${retry} s.`
      : `${STATUS_CODES[status] ?? `Status ${status}`}; nothing was changed.`;
    body = JSON.stringify({ code, message: `${message} (${why})`, status });
  }
  if (fault.headers !== undefined) for (const name in fault.headers) headers[SPELLED[name] ?? name] = fault.headers[name] as string;
  return { status, body, headers };
}

/**
 * Headers the service writes itself, as it spells them: a fault's header of the same name
 * replaces the service's (send.ts replaces a field of the same spelling).
 */
const SPELLED: Readonly<Record<string, string>> = {
  'retry-after': 'Retry-After', 'x-ratelimit-limit': 'X-RateLimit-Limit', 'x-ratelimit-remaining': 'X-RateLimit-Remaining',
  'x-ratelimit-reset': 'X-RateLimit-Reset', ratelimit: 'RateLimit', 'ratelimit-policy': 'RateLimit-Policy',
};

/**
 * The Error code of an injected status: the service's own code for it when it has one (the
 * first in the registry: 500 internal_error, 404 not_found...), else injected_fault. Either
 * way a code of the registry, so the answer conforms to the Error schema of the OpenAPI
 * document.
 */
export function errorCodeOf(status: number): string {
  for (const [code, entry] of Object.entries(ERROR_CODES)) if (entry.status === status && code !== 'injected_fault') return code;
  return 'injected_fault';
}

/** Validates a POST /__admin/faults body; every problem named at once. */
export function parseFault(body: unknown, operations: readonly string[]): FaultSpec | ApiError {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return new ApiError('invalid_request', 'The body must be a JSON object {"operation", and "status", "kind" or "delayMs"}.');
  }
  const raw = body as Record<string, unknown>;
  const problems: string[] = [];
  for (const k of Object.keys(raw)) if (!FIELDS.has(k)) problems.push(`${JSON.stringify(k)} is not a known field`);
  const operation = raw.operation;
  if (typeof operation !== 'string' || !(operation === ANY_OPERATION || operations.includes(operation))) {
    problems.push(`operation must be one of ${operations.join(', ')} or "*" (every operation)`);
  }
  const has = (k: string): boolean => raw[k] !== undefined;
  if (!has('status') && !has('kind') && !has('delayMs')) problems.push('give status (400 to 599), kind (reset, empty or truncated) or delayMs');
  if (has('status') && has('kind')) problems.push('give status or kind, not both');
  if (has('status') && !isIntIn(raw.status, 400, 599)) problems.push('status must be an integer from 400 to 599');
  const key = has('key') || 'key' in raw ? parseKey(raw.key, problems) : undefined;
  const header = has('header') ? parseHeaderMatch(raw.header, problems) : undefined;
  let answerBody: string | undefined;
  if (has('body')) {
    if (!has('status')) problems.push('body goes with status (the answer it is the body of)');
    answerBody = JSON.stringify(raw.body);
    if (answerBody.length > MAX_FAULT_BODY_CHARS) problems.push(`body must be at most ${MAX_FAULT_BODY_CHARS} characters of JSON`);
  }
  const headers = has('headers') ? parseHeaders(raw.headers, problems) : undefined;
  if (has('headers') && !has('status')) problems.push('headers go with status (the answer they are added to)');
  if (has('kind') && !(CONNECTION_FAULTS as readonly unknown[]).includes(raw.kind)) problems.push(`kind must be one of ${CONNECTION_FAULTS.join(', ')}`);
  const delay = has('delayMs') ? parseDelay(raw.delayMs, problems) : undefined;
  if (has('count') && has('probability')) problems.push('give count or probability, not both');
  const count = raw.count ?? (has('probability') ? undefined : 1);
  if (count !== undefined && !isIntIn(count, 1, MAX_FAULT_COUNT)) problems.push(`count must be an integer from 1 to ${MAX_FAULT_COUNT}`);
  const probability = raw.probability;
  if (has('probability') && !(typeof probability === 'number' && probability > 0 && probability <= 1)) {
    problems.push('probability must be a number above 0 and at most 1');
  }
  if (has('seed') && !has('probability') && !(delay !== undefined && delay.min !== delay.max)) {
    problems.push('seed goes with probability or a delayMs range');
  }
  if (has('seed') && !isIntIn(raw.seed, 0, MAX_SEED)) problems.push(`seed must be an integer from 0 to ${MAX_SEED}`);
  if (has('retryAfter') && !has('status')) problems.push('retryAfter goes with status');
  const retryAfter = raw.retryAfter;
  if (has('retryAfter') && !isIntIn(retryAfter, 0, MAX_RETRY_AFTER)) problems.push(`retryAfter must be an integer from 0 to ${MAX_RETRY_AFTER} (seconds)`);
  if (problems.length > 0) return new ApiError('invalid_request', `Invalid fault: ${problems.join('; ')}.`);
  return {
    operation: operation as string,
    ...(key === undefined ? {} : { key }),
    ...(header === undefined ? {} : { header }),
    status: raw.status as number | undefined,
    ...(answerBody === undefined ? {} : { body: answerBody }),
    ...(headers === undefined ? {} : { headers }),
    kind: raw.kind as ConnectionFault | undefined,
    delay,
    retryAfter: retryAfter as number | undefined,
    count: count as number | undefined,
    probability: probability as number | undefined,
    seed: raw.seed as number | undefined,
  };
}

/** `key`: a key's name, or null for requests without a key. */
function parseKey(value: unknown, problems: string[]): string | null | undefined {
  if (value === null) return null;
  if (typeof value === 'string' && value.length > 0 && value.length <= MAX_HEADER_TEXT) return value;
  problems.push('key must be the name of a key in the config, or null (requests without a key)');
  return undefined;
}

/** `header`: {"name", "value"}, a request header that must have exactly that value. */
function parseHeaderMatch(value: unknown, problems: string[]): { name: string; value: string } | undefined {
  const shape = 'header must be {"name": "<header name>", "value": "<exact value>"}';
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    problems.push(shape);
    return undefined;
  }
  const h = value as Record<string, unknown>;
  const extra = Object.keys(h).filter((k) => k !== 'name' && k !== 'value');
  if (extra.length > 0 || typeof h.name !== 'string' || !TOKEN.test(h.name) || typeof h.value !== 'string'
    || h.name.length > MAX_HEADER_TEXT || h.value.length > MAX_HEADER_TEXT || !FIELD_VALUE.test(h.value)) {
    problems.push(shape);
    return undefined;
  }
  return { name: h.name.toLowerCase(), value: h.value };
}

/** `headers`: an object of header names to string values, added to a status answer. */
function parseHeaders(value: unknown, problems: string[]): Record<string, string> | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    problems.push('headers must be an object of header names to string values');
    return undefined;
  }
  const out: Record<string, string> = {};
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length > MAX_FAULT_HEADERS) problems.push(`headers may hold at most ${MAX_FAULT_HEADERS} headers`);
  for (const [name, v] of entries) {
    const lower = name.toLowerCase();
    if (!TOKEN.test(name) || name.length > MAX_HEADER_TEXT) problems.push(`headers: ${JSON.stringify(name.slice(0, 64))} is not a header name`);
    else if (FRAMING.has(lower)) problems.push(`headers: ${name} is the server's to set`);
    else if (typeof v !== 'string' || v.length > MAX_HEADER_TEXT || !FIELD_VALUE.test(v)) problems.push(`headers: the value of ${name} must be a string of at most ${MAX_HEADER_TEXT} characters, without CR, LF or NUL`);
    else out[lower] = v;
  }
  return out;
}

function parseDelay(value: unknown, problems: string[]): DelayRange | undefined {
  const bound = `an integer from 0 to ${MAX_FAULT_DELAY_MS}`;
  if (typeof value === 'number') {
    if (isIntIn(value, 0, MAX_FAULT_DELAY_MS)) return { min: value, max: value };
    problems.push(`delayMs must be ${bound} or {"min", "max"}`);
    return undefined;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    problems.push(`delayMs must be ${bound} or {"min", "max"}`);
    return undefined;
  }
  const range = value as Record<string, unknown>;
  const before = problems.length;
  for (const k of Object.keys(range)) if (k !== 'min' && k !== 'max') problems.push(`delayMs.${k} is not a known field (min, max)`);
  if (!isIntIn(range.min, 0, MAX_FAULT_DELAY_MS)) problems.push(`delayMs.min must be ${bound}`);
  if (!isIntIn(range.max, 0, MAX_FAULT_DELAY_MS)) problems.push(`delayMs.max must be ${bound}`);
  if (problems.length > before) return undefined;
  if ((range.min as number) > (range.max as number)) {
    problems.push('delayMs.min must not be above delayMs.max');
    return undefined;
  }
  return { min: range.min as number, max: range.max as number };
}

function isIntIn(v: unknown, min: number, max: number): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max;
}
