// The filters of GET /__admin/requests and /__admin/requests/count, and whether an entry
// matches them. A bad value is a 400 that names the filter; every problem is named at once.
import { ApiError } from '../core/index.js';
import type { JournalRecord } from './journal-entry.js';

export interface JournalFilter {
  readonly method?: string;
  /** The path, exactly (no query). */
  readonly path?: string;
  /** Paths that start with this. */
  readonly pathPrefix?: string;
  readonly status?: number;
  /** A key's name in the config. */
  readonly key?: string;
  /** An operationId; entries of no operation never match one. */
  readonly operation?: string;
  /** Request headers that must all be there with exactly these values: [name (lower case), value, ...]. */
  readonly headers?: readonly string[];
  /** A requestId: only entries after its latest one. */
  readonly since?: string;
  /** 1..MAX_JOURNAL_LIMIT; default DEFAULT_JOURNAL_LIMIT. */
  readonly limit: number;
}

/** The count's wait: at least `atLeast` matching entries, within `timeoutMs`. */
export interface JournalWait {
  readonly atLeast: number;
  readonly timeoutMs: number;
}

export const DEFAULT_JOURNAL_LIMIT = 100;
export const MAX_JOURNAL_LIMIT = 1000;
/** The longest wait of GET /__admin/requests/count (ms). */
export const MAX_JOURNAL_WAIT_MS = 60_000;
/** The most entries a count can wait for (the largest journal). */
export const MAX_JOURNAL_AT_LEAST = 100_000;
/** Header filters in one query. */
export const MAX_HEADER_FILTERS = 16;

const LIST_FILTERS = ['method', 'path', 'pathPrefix', 'status', 'key', 'operation', 'header', 'since', 'limit'];
const COUNT_FILTERS = [...LIST_FILTERS, 'atLeast', 'timeoutMs'];
const METHOD = /^[A-Za-z]{1,20}$/;
/** RFC 9110 section 5.6.2: a field name is a token. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const MAX_FILTER_LENGTH = 2048;

/** A query given as a Map of values (the router's) or a plain object. */
export type QueryInput = ReadonlyMap<string, readonly string[]> | Readonly<Record<string, string | readonly string[] | undefined>>;

function queryEntries(q: QueryInput): Array<[string, readonly string[]]> {
  if (q instanceof Map) return [...(q as ReadonlyMap<string, readonly string[]>)];
  return Object.entries(q as Record<string, string | readonly string[] | undefined>)
    .filter((e): e is [string, string | readonly string[]] => e[1] !== undefined)
    .map(([k, v]) => [k, typeof v === 'string' ? [v] : v]);
}

/**
 * The filters of GET /__admin/requests (and, with `count`, of /requests/count with its wait);
 * `operations`: the operationIds an `operation` filter may name.
 */
export function parseJournalFilter(query: QueryInput, operations: readonly string[]): JournalFilter | ApiError;
export function parseJournalFilter(query: QueryInput, operations: readonly string[], count: true): { filter: JournalFilter; wait: JournalWait | undefined } | ApiError;
export function parseJournalFilter(query: QueryInput, operations: readonly string[], count = false): JournalFilter | { filter: JournalFilter; wait: JournalWait | undefined } | ApiError {
  const known = count ? COUNT_FILTERS : LIST_FILTERS;
  const problems: string[] = [];
  const values = new Map<string, string>();
  const headerValues: string[] = [];
  for (const [name, given] of queryEntries(query)) {
    if (!known.includes(name)) {
      problems.push(`${JSON.stringify(name)} is not a filter (${known.join(', ')})`);
      continue;
    }
    if (name === 'header') {
      if (given.length > MAX_HEADER_FILTERS) problems.push(`header is given ${given.length} times; at most ${MAX_HEADER_FILTERS}`);
      else headerValues.push(...given);
      continue;
    }
    if (given.length !== 1) {
      problems.push(`${name} is given ${given.length} times; give it once`);
      continue;
    }
    const value = given[0] as string;
    if (value === '' || value.length > MAX_FILTER_LENGTH) problems.push(`${name} must be 1 to ${MAX_FILTER_LENGTH} characters`);
    else values.set(name, value);
  }
  const method = values.get('method');
  if (method !== undefined && !METHOD.test(method)) problems.push('method must be an HTTP method such as GET or POST');
  const path = values.get('path');
  if (path !== undefined && !path.startsWith('/')) problems.push('path must start with "/" (for example /v1/pets); it is matched exactly, without the query');
  const pathPrefix = values.get('pathPrefix');
  if (pathPrefix !== undefined && !pathPrefix.startsWith('/')) problems.push('pathPrefix must start with "/" (for example /v1/pets/)');
  const status = values.get('status');
  if (status !== undefined && !/^(?:0|[1-5][0-9]{2})$/.test(status)) problems.push('status must be an HTTP status from 100 to 599, or 0 (a connection broken before any answer)');
  const operation = values.get('operation');
  if (operation !== undefined && !operations.includes(operation)) problems.push(`operation must be one of ${operations.join(', ')}`);
  const headers: string[] = [];
  for (const h of headerValues) {
    const colon = h.indexOf(':');
    const name = colon === -1 ? '' : h.slice(0, colon).trim();
    if (colon === -1 || !TOKEN.test(name) || h.length > MAX_FILTER_LENGTH) {
      problems.push(`header must be "name:value" (a header name, a colon, the exact value), got ${JSON.stringify(h.slice(0, 64))}`);
    } else {
      headers.push(name.toLowerCase(), h.slice(colon + 1).trim());
    }
  }
  const limit = boundedInt(values.get('limit'), 'limit', 1, MAX_JOURNAL_LIMIT, DEFAULT_JOURNAL_LIMIT, problems);
  const atLeast = boundedInt(values.get('atLeast'), 'atLeast', 1, MAX_JOURNAL_AT_LEAST, undefined, problems);
  const timeoutMs = boundedInt(values.get('timeoutMs'), 'timeoutMs', 0, MAX_JOURNAL_WAIT_MS, undefined, problems);
  if (values.has('timeoutMs') && !values.has('atLeast')) problems.push('timeoutMs goes with atLeast (the number of entries to wait for)');
  if (problems.length > 0) return new ApiError('invalid_request', `Invalid request journal filter: ${problems.join('; ')}.`);
  const filter: JournalFilter = {
    ...(method === undefined ? {} : { method: method.toUpperCase() }),
    ...(path === undefined ? {} : { path }),
    ...(pathPrefix === undefined ? {} : { pathPrefix }),
    ...(status === undefined ? {} : { status: Number(status) }),
    ...(values.has('key') ? { key: values.get('key') as string } : {}),
    ...(operation === undefined ? {} : { operation }),
    ...(headers.length === 0 ? {} : { headers }),
    ...(values.has('since') ? { since: values.get('since') as string } : {}),
    limit: limit as number,
  };
  if (!count) return filter;
  return { filter, wait: atLeast === undefined ? undefined : { atLeast, timeoutMs: timeoutMs ?? 0 } };
}

/** A decimal integer filter within [min, max] (its default when absent); a problem named otherwise. */
function boundedInt(text: string | undefined, name: string, min: number, max: number, absent: number | undefined, problems: string[]): number | undefined {
  if (text === undefined) return absent;
  const n = /^[0-9]{1,9}$/.test(text) ? Number(text) : NaN;
  if (!(n >= min && n <= max)) {
    problems.push(`${name} must be an integer from ${min} to ${max}`);
    return absent;
  }
  return n;
}

/** Whether a record matches every filter given (since and limit are applied by the caller). */
export function matches(r: JournalRecord, f: JournalFilter): boolean {
  if ((f.method !== undefined && r.method !== f.method)
    || (f.path !== undefined && r.path !== f.path)
    || (f.pathPrefix !== undefined && !r.path.startsWith(f.pathPrefix))
    || (f.status !== undefined && r.status !== f.status)
    || (f.key !== undefined && r.key !== f.key)
    || (f.operation !== undefined && r.operation !== f.operation)) return false;
  const wanted = f.headers;
  if (wanted === undefined) return true;
  for (let i = 0; i < wanted.length; i += 2) if (headerValue(r.headers, wanted[i] as string) !== wanted[i + 1]) return false;
  return true;
}

/** The value of a header in a [name, value, ...] list (names in lower case, each once), or undefined. */
export function headerValue(list: readonly string[], name: string): string | undefined {
  for (let i = 0; i < list.length; i += 2) if (list[i] === name) return list[i + 1];
  return undefined;
}
