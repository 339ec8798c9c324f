// One registry of error codes: every failure the service answers with comes from here, so
// the `code` a client sees is stable and every code is documented (see test/core/errors.test.ts).

export const ERROR_CODES = {
  invalid_request: { status: 400, summary: 'The request has a missing or invalid parameter or body field.' },
  unauthorized: { status: 401, summary: 'The API key is missing or invalid.' },
  not_found: { status: 404, summary: 'No such resource or path.' },
  request_timeout: { status: 408, summary: 'The request (headers or body) did not arrive in time.' },
  conflict: { status: 409, summary: 'The request conflicts with the current state (for example a 17th snapshot name while 16 are kept); change that state first.' },
  idempotency_key_in_use: { status: 409, summary: 'A request with this Idempotency-Key is still being processed; retry once it has been answered.' },
  method_not_allowed: { status: 405, summary: 'The path exists but not with this method; see the Allow header.' },
  expectation_failed: { status: 417, summary: 'The request has an Expect header other than 100-continue.' },
  payload_too_large: { status: 413, summary: 'The request body is larger than the configured maximum.' },
  idempotency_key_reused: { status: 422, summary: 'This Idempotency-Key was already used with another payload; use a new key for a new pet.' },
  request_header_fields_too_large: { status: 431, summary: 'The request headers are larger than the server accepts.' },
  unsupported_media_type: { status: 415, summary: 'The request body is not application/json.' },
  rate_limited: { status: 429, summary: 'Rate limit exceeded; wait Retry-After seconds.' },
  temporarily_banned: { status: 429, summary: 'The key (or address) kept sending after 429s and is banned for Retry-After seconds.' },
  internal_error: { status: 500, summary: 'An unexpected failure; the request changed nothing.' },
  not_implemented: { status: 501, summary: 'The operation exists but is not available here: its shape is not published, the body has a transfer coding other than chunked, or (admin snapshots) the store or limits are kept outside this process.' },
  ids_exhausted: { status: 507, summary: 'No pet id is left (ids stay within the safe integer range and the largest is taken); nothing was added, and retrying cannot help: only a reset frees ids.' },
  injected_fault: { status: 502, summary: 'A test harness asked for this answer (a fault armed through /__admin/faults, or a request\'s Prefer: code=): its status is the one asked for, any of 400 to 599; used for a status that has no code of its own here.' },
  service_unavailable: { status: 503, summary: 'The store cannot write right now (disk full or failing), the database cannot be reached, or too many request bodies are arriving at once; retry after Retry-After seconds.' },
} as const satisfies Record<string, { status: number; summary: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;

/**
 * The one error type the HTTP layer turns into an Error body; anything else is a 500.
 *
 * An ApiError is an answer, not a fault, and it is built on every 400 and 401: it does not
 * run Error's constructor, whose stack capture (even with none kept) was the largest cost of
 * those answers. It still is an Error to whoever checks (`instanceof Error`, `name`,
 * `message`): its prototype chain goes through Error.prototype (set just below the class).
 */
export class ApiError {
  readonly code: ErrorCode;
  readonly message: string;
  readonly status: number;
  readonly headers: Readonly<Record<string, string>> | undefined;
  /** The serialized Error body. */
  readonly body: string;
  constructor(code: ErrorCode, message: string, headers?: Record<string, string>) {
    this.code = code;
    this.message = message;
    this.status = ERROR_CODES[code].status;
    this.headers = headers;
    this.body = errorBody(code, message);
  }
}
// Declaration merging tells TypeScript what the prototype chain below makes true.
export interface ApiError extends Error {}
Object.setPrototypeOf(ApiError.prototype, Error.prototype);
Object.defineProperty(ApiError.prototype, 'name', { value: 'ApiError', writable: true, configurable: true });

/** The Error body `{code, message, status}`, serialized (only the message needs escaping; codes are plain). */
export function errorBody(code: ErrorCode, message: string): string {
  return `{"code":"${code}","message":${JSON.stringify(message)},"status":${ERROR_CODES[code].status}}`;
}
