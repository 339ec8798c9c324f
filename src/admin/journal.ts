// The request journal (GET /__admin/requests): every /v1 request, rejected ones too, kept in a
// bounded ring so that a harness can check what its client sent. The ring holds at most
// `capacity` entries and at most JOURNAL_MAX_BYTES of them by estimate; the oldest go first,
// counted in `dropped`. Recording is O(1) and copies nothing but the few strings it is given:
// the body is kept as the JSON text the request carried (a string), and turned back into JSON
// only when an entry is read.
//
// With several workers each keeps its own ring; the asking worker gathers the others' matching
// entries (slice()) and merges them in time order (mergeSlices()).
import { ApiError } from '../core/index.js';

/** What the request lifecycle hands over once a /v1 request is answered. */
export interface JournalRecord {
  readonly requestId: string;
  /** When the answer was sent, in ms on the service clock. */
  readonly at: number;
  readonly method: string;
  /** The path without the query. */
  readonly path: string;
  /** The query string as sent, without the "?" ('' for none). */
  readonly rawQuery: string;
  /** The name of the API key in the config, or null (no key, or a wrong one). */
  readonly key: string | null;
  readonly status: number;
  readonly durationMs: number;
  readonly idempotencyKey: string | null;
  /** The body's text when it was JSON of at most JOURNAL_MAX_BODY_BYTES (already parsed once); else undefined. */
  readonly bodyJson: string | undefined;
}

/** One entry as GET /__admin/requests shows it. */
export interface JournalEntry {
  requestId: string;
  /** RFC 3339, service clock, when the answer was sent. */
  time: string;
  method: string;
  path: string;
  query: Record<string, string | string[]>;
  key: string | null;
  /** 0 when the connection was broken before any answer (a reset or empty fault). */
  status: number;
  durationMs: number;
  idempotencyKey: string | null;
  body: unknown;
}

export interface JournalFilter {
  readonly method?: string;
  readonly path?: string;
  readonly status?: number;
  readonly key?: string;
  /** A requestId: only entries after its latest one. */
  readonly since?: string;
  /** 1..MAX_JOURNAL_LIMIT; default DEFAULT_JOURNAL_LIMIT. */
  readonly limit: number;
}

/** The matching entries of one ring (one worker), oldest first, and what it dropped. */
export interface JournalSlice {
  readonly records: readonly JournalRecord[];
  readonly dropped: number;
}

/** Bodies larger than this are recorded as null. */
export const JOURNAL_MAX_BODY_BYTES = 64 * 1024;
/** The most the ring holds, all entries together, by estimate (see entryBytes). */
export const JOURNAL_MAX_BYTES = 64 * 1024 * 1024;
/**
 * The estimated cost of an entry besides its strings: the record object (11 fields) and its
 * slot in the ring. Measured (test/admin/journal.test.ts, node --expose-gc) with 100,000 entries
 * of short strings, half with a small body: about 200 bytes each, strings included, where this
 * estimate says 260: the estimate errs on the safe side.
 */
export const ENTRY_OVERHEAD_BYTES = 160;
export const DEFAULT_JOURNAL_LIMIT = 100;
export const MAX_JOURNAL_LIMIT = 1000;

const FILTERS = ['method', 'path', 'status', 'key', 'since', 'limit'];
const METHOD = /^[A-Za-z]{1,20}$/;
const MAX_FILTER_LENGTH = 2048;

/** Estimated heap bytes of a record: overhead plus two bytes per character of its strings. */
export function entryBytes(r: JournalRecord): number {
  return ENTRY_OVERHEAD_BYTES + 2 * (r.requestId.length + r.method.length + r.path.length + r.rawQuery.length
    + (r.key?.length ?? 0) + (r.idempotencyKey?.length ?? 0) + (r.bodyJson?.length ?? 0));
}

export class RequestJournal {
  readonly capacity: number;
  readonly maxBytes: number;
  #ring: Array<JournalRecord | undefined>;
  /** Index of the oldest entry. */
  #head = 0;
  #size = 0;
  #bytes = 0;
  #dropped = 0;

  /** @param capacity entries kept, 0 (records nothing) to any bound the config allows. */
  constructor(capacity: number, maxBytes = JOURNAL_MAX_BYTES) {
    this.capacity = capacity;
    this.maxBytes = maxBytes;
    // Grown as entries arrive, so a large capacity costs nothing until it is used.
    this.#ring = [];
  }

  get size(): number {
    return this.#size;
  }

  /** Estimated heap bytes of the entries held. */
  get bytes(): number {
    return this.#bytes;
  }

  /** Entries evicted since the last clear. */
  get dropped(): number {
    return this.#dropped;
  }

  record(r: JournalRecord): void {
    if (this.capacity === 0) return;
    const cost = entryBytes(r);
    while (this.#size > 0 && (this.#size >= this.capacity || this.#bytes + cost > this.maxBytes)) this.#evict();
    const slot = (this.#head + this.#size) % this.capacity;
    if (slot === this.#ring.length) this.#ring.push(r);
    else this.#ring[slot] = r;
    this.#size++;
    this.#bytes += cost;
  }

  #evict(): void {
    const old = this.#ring[this.#head] as JournalRecord;
    this.#ring[this.#head] = undefined;
    this.#bytes -= entryBytes(old);
    this.#head = (this.#head + 1) % this.capacity;
    this.#size--;
    this.#dropped++;
  }

  /** Empties the journal; dropped starts again from 0. */
  clear(): void {
    this.#ring = [];
    this.#head = 0;
    this.#size = 0;
    this.#bytes = 0;
    this.#dropped = 0;
  }

  /** The entries matching the filter's method, path, status and key, oldest first (since and limit are applied after a merge). */
  slice(filter: JournalFilter): JournalSlice {
    const records: JournalRecord[] = [];
    for (let i = 0; i < this.#size; i++) {
      const r = this.#ring[(this.#head + i) % this.capacity] as JournalRecord;
      if (matches(r, filter)) records.push(r);
    }
    return { records, dropped: this.#dropped };
  }
}

function matches(r: JournalRecord, f: JournalFilter): boolean {
  return (f.method === undefined || r.method === f.method)
    && (f.path === undefined || r.path === f.path)
    && (f.status === undefined || r.status === f.status)
    && (f.key === undefined || r.key === f.key);
}

/**
 * The slices of several rings (workers) as one: in time order (ties in the order given), after
 * `since`, at most `limit`; dropped summed. An unknown `since` is an ApiError (400): the entry
 * was never recorded, or was evicted (see `dropped`).
 */
export function mergeSlices(slices: readonly JournalSlice[], filter: JournalFilter): { records: JournalRecord[]; dropped: number } | ApiError {
  let dropped = 0;
  let all: JournalRecord[];
  if (slices.length === 1) {
    const only = slices[0] as JournalSlice;
    all = only.records as JournalRecord[];
    dropped = only.dropped;
  } else {
    const tagged: Array<{ r: JournalRecord; source: number; index: number }> = [];
    slices.forEach((s, source) => {
      dropped += s.dropped;
      s.records.forEach((r, index) => tagged.push({ r, source, index }));
    });
    tagged.sort((a, b) => a.r.at - b.r.at || a.source - b.source || a.index - b.index);
    all = tagged.map((t) => t.r);
  }
  let start = 0;
  if (filter.since !== undefined) {
    let found = -1;
    for (let i = all.length - 1; i >= 0; i--) {
      if ((all[i] as JournalRecord).requestId === filter.since) {
        found = i;
        break;
      }
    }
    if (found < 0) {
      return new ApiError('invalid_request', `since: no request with id ${JSON.stringify(filter.since)} among the entries kept that match the other filters (never recorded, or evicted: ${dropped} dropped since the last clear).`);
    }
    start = found + 1;
  }
  return { records: all.slice(start, start + filter.limit), dropped };
}

/** How many entries match, after `since` (no limit). */
export function countSlices(slices: readonly JournalSlice[], filter: JournalFilter): number | ApiError {
  const merged = mergeSlices(slices, { ...filter, limit: Number.MAX_SAFE_INTEGER });
  return merged instanceof ApiError ? merged : merged.records.length;
}

/** A record as the API shows it. */
export function journalEntry(r: JournalRecord): JournalEntry {
  return {
    requestId: r.requestId,
    time: new Date(r.at).toISOString(),
    method: r.method,
    path: r.path,
    query: queryObject(r.rawQuery),
    key: r.key,
    status: r.status,
    durationMs: r.durationMs,
    idempotencyKey: r.idempotencyKey,
    body: r.bodyJson === undefined ? null : JSON.parse(r.bodyJson),
  };
}

/** The JSON of GET /__admin/requests. */
export function journalPageJson(page: { records: readonly JournalRecord[]; dropped: number }): string {
  return JSON.stringify({ requests: page.records.map(journalEntry), dropped: page.dropped });
}

/** The query parameters as sent: a name given once maps to its value, given more often to every value in order. */
export function queryObject(raw: string): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = Object.create(null) as Record<string, string | string[]>;
  if (raw === '') return out;
  for (const [name, value] of new URLSearchParams(raw)) {
    const seen = out[name];
    if (seen === undefined) out[name] = value;
    else if (typeof seen === 'string') out[name] = [seen, value];
    else seen.push(value);
  }
  return out;
}

/** A query given as a Map of values (the router's) or a plain object. */
export type QueryInput = ReadonlyMap<string, readonly string[]> | Readonly<Record<string, string | readonly string[] | undefined>>;

function queryEntries(q: QueryInput): Array<[string, readonly string[]]> {
  if (q instanceof Map) return [...(q as ReadonlyMap<string, readonly string[]>)];
  return Object.entries(q as Record<string, string | readonly string[] | undefined>)
    .filter((e): e is [string, string | readonly string[]] => e[1] !== undefined)
    .map(([k, v]) => [k, typeof v === 'string' ? [v] : v]);
}

/** The filters of GET /__admin/requests and /requests/count; a bad one is a 400 that names it. */
export function parseJournalFilter(query: QueryInput): JournalFilter | ApiError {
  const problems: string[] = [];
  const values = new Map<string, string>();
  for (const [name, given] of queryEntries(query)) {
    if (!FILTERS.includes(name)) {
      problems.push(`${JSON.stringify(name)} is not a filter (${FILTERS.join(', ')})`);
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
  const status = values.get('status');
  if (status !== undefined && !/^(?:0|[1-5][0-9]{2})$/.test(status)) problems.push('status must be an HTTP status from 100 to 599, or 0 (a connection broken before any answer)');
  const limitText = values.get('limit');
  let limit = DEFAULT_JOURNAL_LIMIT;
  if (limitText !== undefined) {
    limit = /^[0-9]{1,4}$/.test(limitText) ? Number(limitText) : 0;
    if (limit < 1 || limit > MAX_JOURNAL_LIMIT) problems.push(`limit must be an integer from 1 to ${MAX_JOURNAL_LIMIT}`);
  }
  if (problems.length > 0) return new ApiError('invalid_request', `Invalid request journal filter: ${problems.join('; ')}.`);
  return {
    ...(method === undefined ? {} : { method: method.toUpperCase() }),
    ...(path === undefined ? {} : { path }),
    ...(status === undefined ? {} : { status: Number(status) }),
    ...(values.has('key') ? { key: values.get('key') as string } : {}),
    ...(values.has('since') ? { since: values.get('since') as string } : {}),
    limit,
  };
}
