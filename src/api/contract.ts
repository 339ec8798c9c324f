// The API as data: what a route is (RouteSpec), what its handler is given (HandlerContext) and
// answers (Reply). It imports no implementation: the app dispatches from routes it is given,
// and the OpenAPI document is generated from the same objects.
import type { ApiError } from '../core/index.js';
import type { Config } from '../config/index.js';
import type { PageVersion, PetStore } from '../store/index.js';
import type { PageCache, PetCache } from './page-cache.js';
import type { Schema } from './validate.js';

/** A parsed query string: each name with its values in order. */
export type Query = ReadonlyMap<string, readonly string[]>;

/**
 * How the connection ends instead of an ordinary answer (for test harnesses that simulate
 * broken networks): 'reset' drops it with a TCP RST, 'empty' closes it without a byte of
 * answer, 'truncated' sends the status line, the headers and half of the body, then closes.
 */
export type ConnectionEnd = 'reset' | 'empty' | 'truncated';

/** What a handler answers; the app adds the common headers and sends it. */
export interface Reply {
  readonly status: number;
  /** Serialized JSON (a Buffer when it is reused across requests), or undefined for no body. */
  readonly body: string | Buffer | undefined;
  readonly headers?: Readonly<Record<string, string>>;
  /** Another content type than JSON (the Prometheus text of /metrics). */
  readonly contentType?: string;
  /** Ends the connection this way instead of answering normally (see ConnectionEnd). */
  readonly end?: ConnectionEnd;
}

/**
 * What a handler is given: plain data about the request, read and checked by the HTTP layer
 * before the handler runs, and the handler's dependencies. No HTTP objects: a handler can be
 * called from a test with a literal.
 */
export interface HandlerContext {
  /** Path parameters by name ({petId}). */
  readonly params: Readonly<Record<string, string>>;
  /** The query string as sent, without the '?' ('' when none): the key of cached answers. */
  readonly rawQuery: string;
  /** The query string, parsed (on first use; a bad percent-encoding throws its 400). */
  readonly query: Query;
  /** The parsed JSON body, on routes that declare one (requestBody); else undefined. */
  readonly body: unknown;
  /** The Idempotency-Key, validated, on routes that declare the header and when sent. */
  readonly idempotencyKey: string | undefined;
  /** The digest of the API key that sent the request (undefined on routes that need none). */
  readonly scope: string | undefined;
  /** The name of that key, for logs. */
  readonly keyName: string | undefined;
  /** Public base URL ending in /v1, for links (computed at most once per request). */
  readonly base: string;
  /** Inside a namespace: its path prefix (/ns/{name}), already in `base`, for the other URLs a handler writes. */
  readonly pathPrefix?: string;
  /** The monotonic clock's reading for this request (ms), taken once when it arrived. */
  readonly now: number;
  /** The config in force for this request (one snapshot per request). */
  readonly config: Config;
  readonly store: PetStore;
  /**
   * Serialized list pages of this app instance (see PageCache), and the store's version they
   * are checked against: only for a store that offers one (see PageVersion); else undefined.
   */
  readonly pages: { readonly cache: PageCache; readonly version: PageVersion } | undefined;
  /** Each pet's answer as bytes, for the same stores as `pages` (pets never change); else undefined. */
  readonly pets: PetCache | undefined;
}

export interface Parameter {
  readonly name: string;
  readonly in: 'query' | 'path' | 'header';
  readonly required: boolean;
  readonly schema: Schema;
  /** For the OpenAPI document, when the schema's own description does not say enough. */
  readonly description?: string;
}

export interface RouteSpec {
  readonly operationId: string;
  readonly method: 'GET' | 'POST';
  /** Relative to the /v1 base. */
  readonly path: string;
  readonly summary: string;
  readonly tags: readonly string[];
  /**
   * 'key': a bearer key is required; 'none': public, limited per client address; 'optional':
   * public, and a valid key is charged to its own budget (without one, or with a wrong one:
   * limited per client address, as 'none').
   */
  readonly auth: 'key' | 'none' | 'optional';
  readonly deprecated?: { readonly sunset: string; readonly successor: string };
  readonly parameters: readonly Parameter[];
  /** The JSON body's schema: the HTTP layer reads and parses a body only for routes that declare one. */
  readonly requestBody?: Schema;
  /** Status code -> description and body schema (undefined: a free-form JSON object; 'OpenApi': the document's own). */
  readonly responses: Readonly<Record<number, { readonly description: string; readonly schema?: Schema | 'Error' | 'OpenApi' }>>;
  /**
   * The answer, or an ApiError for the Error body, at once or as a promise (only when the
   * store does). Hot paths return their ApiError rather than throw it (see schemas.ts); a
   * throw or a rejection is answered the same way.
   */
  readonly handler: (ctx: HandlerContext) => Reply | ApiError | Promise<Reply | ApiError>;
}

