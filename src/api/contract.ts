// The API as data: what a route is (RouteSpec), what its handler is given (HandlerContext) and
// answers (Reply). It imports no implementation: the app dispatches from routes it is given,
// and the OpenAPI document is generated from the same objects.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ApiError } from '../core/index.js';
import type { Config } from '../config/index.js';
import type { PageVersion, PetStore } from '../store/index.js';
import type { PageCache } from './page-cache.js';
import type { Schema } from './validate.js';

/** A parsed query string: each name with its values in order. */
export type Query = ReadonlyMap<string, readonly string[]>;

/** Reads a request's JSON body within the bounds given (the app's, one per instance). */
export interface BodyReader {
  /**
   * The parsed body of at most maxBytes; the bodies arriving at once hold at most maxPending
   * bytes together. Rejects with an ApiError (400, 413, 415, 501, 503). With a client waiting
   * for "100 Continue", sends it once the body is wanted.
   */
  readJson(req: IncomingMessage, res: ServerResponse, maxBytes: number, maxPending: number): Promise<unknown>;
}

/** What a handler answers; the app adds the common headers and sends it. */
export interface Reply {
  readonly status: number;
  /** Serialized JSON (a Buffer when it is reused across requests), or undefined for no body. */
  readonly body: string | Buffer | undefined;
  readonly headers?: Readonly<Record<string, string>>;
}

export interface HandlerContext {
  readonly req: IncomingMessage;
  /** For the 100 Continue of a request whose body will be read (see BodyReader). */
  readonly res: ServerResponse;
  readonly params: Readonly<Record<string, string>>;
  readonly query: Query;
  readonly store: PetStore;
  readonly maxBodyBytes: number;
  /** Public base URL ending in /v1, for links. */
  readonly base: string;
  /** The config in force for this request. */
  readonly config: Config;
  /**
   * Serialized list pages of this app instance (see PageCache), and the store's version they
   * are checked against: only for a store that offers one (see PageVersion); else undefined.
   */
  readonly pages: { readonly cache: PageCache; readonly version: PageVersion } | undefined;
  /** Reads the request's JSON body: HTTP's work, handed to the handlers by the app. */
  readonly bodies: BodyReader;
  /** The digest of the API key that sent the request (undefined on routes that need none). */
  readonly scope: string | undefined;
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

