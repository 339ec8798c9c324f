// One request of the journal: what the HTTP layer hands over once a /v1 request is answered
// (the whole exchange), what the ring keeps of it (a JournalRecord, capped), and how
// GET /__admin/requests shows it (a JournalEntry). Recording copies little: the request's
// header list is rebuilt once (names in lower case, repeated fields joined, the key replaced
// by its name), the bodies are kept as the JSON text they were, and turned back into JSON
// only when an entry is read.

/** What the HTTP layer hands over for one answered (or broken) /v1 request. */
export interface Exchanged {
  readonly requestId: string;
  /** When the answer was sent, in ms on the service clock. */
  readonly at: number;
  readonly method: string;
  /** The path without the query. */
  readonly path: string;
  /** The query string as sent, without the "?" ('' for none). */
  readonly rawQuery: string;
  /** The operationId of the route, or undefined (a path of no operation). */
  readonly operation: string | undefined;
  /** The name of the API key in the config, when a valid key was sent. */
  readonly keyName: string | undefined;
  /** Node's raw request header list: [name, value, ...] as sent. */
  readonly rawHeaders: readonly string[];
  /** The parsed request body, on routes that read one. */
  readonly requestBody: unknown;
  readonly idempotencyKey: string | null;
  /** 0 when the connection was broken before any answer. */
  readonly status: number;
  readonly durationMs: number;
  /** The answer's header list as written ([name, value, ...]); undefined when none was. */
  readonly responseHeaders: readonly string[] | undefined;
  /** The answer's body as written (or as it would have been, for a truncated one). */
  readonly responseBody: string | Buffer | undefined;
  /** Its Content-Type. */
  readonly responseType: string | undefined;
}

/** What the ring keeps of a request. */
export interface JournalRecord {
  readonly requestId: string;
  readonly at: number;
  readonly method: string;
  readonly path: string;
  readonly rawQuery: string;
  readonly operation: string | null;
  /** The name of the API key in the config, or null (no key, or a wrong one). */
  readonly key: string | null;
  /** The request's headers: [name (lower case), value, ...], each name once, the key replaced by its name. */
  readonly headers: readonly string[];
  readonly status: number;
  readonly durationMs: number;
  readonly idempotencyKey: string | null;
  /** The request body's text when it was JSON of at most JOURNAL_MAX_BODY_BYTES; else undefined. */
  readonly bodyJson: string | undefined;
  /** The answer's headers, as `headers`. */
  readonly responseHeaders: readonly string[];
  /** The answer's body text when it was JSON of at most JOURNAL_MAX_BODY_BYTES; else undefined. */
  readonly responseJson: string | undefined;
}

/** One entry as GET /__admin/requests shows it. */
export interface JournalEntry {
  requestId: string;
  /** RFC 3339, service clock, when the answer was sent. */
  time: string;
  method: string;
  path: string;
  query: Record<string, string | string[]>;
  /** listPets, createPet, getPet... or null for a path of no operation. */
  operation: string | null;
  key: string | null;
  headers: Record<string, string>;
  /** 0 when the connection was broken before any answer (a reset or empty fault). */
  status: number;
  durationMs: number;
  idempotencyKey: string | null;
  body: unknown;
  response: { status: number; headers: Record<string, string>; body: unknown };
}

/** Bodies (request or answer) larger than this are recorded as null. */
export const JOURNAL_MAX_BODY_BYTES = 64 * 1024;
/** The request headers kept of one request, names and values together (characters); the rest are left out. */
export const JOURNAL_MAX_HEADER_CHARS = 16 * 1024;
/**
 * The estimated cost of an entry besides its strings: the record object (14 fields), its two
 * header lists and its slot in the ring. Measured (test/admin/journal.test.ts, node
 * --expose-gc) with 100,000 entries of a dozen short headers each, half with a small body:
 * see docs/harness.md for the figures; the estimate errs on the safe side.
 */
export const ENTRY_OVERHEAD_BYTES = 200;

/**
 * Estimated heap bytes of a record: overhead; per header string its slot and V8's string
 * header (40 together) and a byte per character (node reads header fields as Latin-1, one byte per
 * character); two bytes per character of the other strings (a body may hold any character).
 */
export function entryBytes(r: JournalRecord): number {
  const chars = r.requestId.length + r.method.length + r.path.length + r.rawQuery.length
    + (r.key?.length ?? 0) + (r.idempotencyKey?.length ?? 0) + (r.bodyJson?.length ?? 0) + (r.responseJson?.length ?? 0);
  let headerChars = 0;
  for (const s of r.headers) headerChars += s.length;
  for (const s of r.responseHeaders) headerChars += s.length;
  return ENTRY_OVERHEAD_BYTES + 40 * (r.headers.length + r.responseHeaders.length) + headerChars + 2 * chars;
}

/** The record of an exchange: capped, the key shown by its name only. */
export function recordOf(e: Exchanged): JournalRecord {
  let bodyJson: string | undefined;
  if (e.requestBody !== undefined) bodyJson = jsonWithin(JSON.stringify(e.requestBody));
  let responseJson: string | undefined;
  const body = e.responseBody;
  if (body !== undefined && e.responseType !== undefined && e.responseType.includes('json') && body.length <= JOURNAL_MAX_BODY_BYTES) {
    responseJson = jsonWithin(typeof body === 'string' ? body : body.toString('utf8'));
  }
  return {
    requestId: e.requestId,
    at: e.at,
    method: e.method,
    path: e.path,
    rawQuery: e.rawQuery,
    operation: e.operation ?? null,
    key: e.keyName ?? null,
    headers: requestHeaders(e.rawHeaders, e.keyName, JOURNAL_MAX_HEADER_CHARS),
    status: e.status,
    durationMs: e.durationMs,
    idempotencyKey: e.idempotencyKey,
    bodyJson,
    responseHeaders: e.responseHeaders === undefined ? NONE : joined(e.responseHeaders, undefined, Infinity),
    responseJson,
  };
}
const NONE: readonly string[] = [];

function jsonWithin(text: string): string | undefined {
  // A string of n UTF-16 units has at most 3n bytes of UTF-8: measured only when it may be over.
  if (text.length > JOURNAL_MAX_BODY_BYTES / 3 && Buffer.byteLength(text) > JOURNAL_MAX_BODY_BYTES) return undefined;
  return text;
}

/**
 * The request's headers as the journal shows them: the Authorization value replaced by
 * `Bearer <key name>` (a valid key) or `Bearer <unknown>`, never the key.
 */
export function requestHeaders(raw: readonly string[], keyName: string | undefined, maxChars: number): string[] {
  return joined(raw, keyName === undefined ? 'Bearer <unknown>' : `Bearer ${keyName}`, maxChars);
}

/**
 * A [name, value, ...] list with names in lower case and each once, repeated ones joined by
 * ", " in the order sent (RFC 9110 section 5.3); `authorization` given its shown value. Headers
 * past `maxChars` (names and values together) are left out.
 */
function joined(raw: readonly string[], authorization: string | undefined, maxChars: number): string[] {
  const out: string[] = [];
  let chars = 0;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = (raw[i] as string).toLowerCase();
    const value = name === 'authorization' && authorization !== undefined ? authorization : raw[i + 1] as string;
    let at = -1;
    for (let j = 0; j < out.length; j += 2) {
      if (out[j] === name) {
        at = j;
        break;
      }
    }
    if (at !== -1 && name === 'authorization') continue; // shown once, whatever was sent
    chars += (at === -1 ? name.length : 2) + value.length;
    if (chars > maxChars) break;
    if (at === -1) out.push(name, value);
    else out[at + 1] = `${out[at + 1] as string}, ${value}`;
  }
  return out;
}

/** A record as the API shows it. */
export function journalEntry(r: JournalRecord): JournalEntry {
  return {
    requestId: r.requestId,
    time: new Date(r.at).toISOString(),
    method: r.method,
    path: r.path,
    query: queryObject(r.rawQuery),
    operation: r.operation,
    key: r.key,
    headers: headerObject(r.headers),
    status: r.status,
    durationMs: r.durationMs,
    idempotencyKey: r.idempotencyKey,
    body: r.bodyJson === undefined ? null : JSON.parse(r.bodyJson),
    response: {
      status: r.status,
      headers: headerObject(r.responseHeaders),
      body: r.responseJson === undefined ? null : parseOrNull(r.responseJson),
    },
  };
}

function parseOrNull(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null; // an answer sent as JSON that was not (none of ours): shown as no body
  }
}

function headerObject(list: readonly string[]): Record<string, string> {
  const out: Record<string, string> = Object.create(null) as Record<string, string>;
  for (let i = 0; i < list.length; i += 2) out[list[i] as string] = list[i + 1] as string;
  return out;
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
