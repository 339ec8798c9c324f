// The route table: each operation as data (path, method, parameters, responses) plus its
// handler. The app dispatches from it and the OpenAPI document is generated from it.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ApiError } from './core/errors.js';
import { readJsonBody, type PendingBodies } from './body.js';
import type { Query } from './query.js';
import {
  cursorSchema, limitSchema, newPetSchema, parseListQuery, parseNewPet, parsePetId, petIdSchema, petSchema,
  petStatusSchema,
} from './schemas.js';
import type { Schema } from './validate.js';
import type { PageVersion, PetStore, StoredPet } from './store/index.js';
import type { Config } from './config/index.js';
import { openApiDocument } from './openapi.js';

/** What a handler answers; the app adds the common headers and sends it. */
export interface Reply {
  readonly status: number;
  /** Serialized JSON (a Buffer when it is reused across requests), or undefined for no body. */
  readonly body: string | Buffer | undefined;
  readonly headers?: Readonly<Record<string, string>>;
}

export interface HandlerContext {
  readonly req: IncomingMessage;
  /** For the 100 Continue of a request that will be read (see readJsonBody). */
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
  /** Bytes of unfinished request bodies this app instance holds (bounded by the config). */
  readonly bodies: PendingBodies;
}

interface CachedPage {
  readonly generation: number;
  /** Pets in the store when the page was built; a last page is valid only while this holds. */
  readonly count: number;
  /**
   * Bytes, not a string: node writes a Buffer body beside the header block, whereas a string
   * body is first concatenated with it, a fresh copy per request.
   */
  readonly body: Buffer;
  /** Id of the page's last pet when more pets follow, else undefined. */
  readonly nextAfter: number | undefined;
  /** The next link as last built, and the base URL it was built for. */
  link?: { readonly base: string; readonly value: string };
  /** Read since the cache last looked at it for eviction (see PageCache). */
  used?: boolean;
}

/**
 * Serialized pages of GET /pets, so the hot read does not rebuild the same JSON on every
 * request. Pets are immutable and ids ascend, so a page that has a successor never changes
 * until a reset (the store's generation); the last page is valid while no pet was added.
 *
 * Bounded in entries and in bytes (a page of long names is far larger than a page of short
 * ones). Past either bound the least recently used pages go first, by the second-chance
 * (CLOCK) approximation of LRU: a hit only sets a flag, so the hot read pays one store and
 * no reordering; eviction walks from the oldest entry, and a flagged one is moved to the
 * back with its flag cleared instead of being dropped.
 */
export class PageCache {
  static readonly MAX_PAGES = 1024;
  static readonly MAX_BYTES = 16 * 1024 * 1024;
  readonly #pages = new Map<string, CachedPage>();
  readonly #maxPages: number;
  readonly #maxBytes: number;
  #bytes = 0;

  constructor(maxPages = PageCache.MAX_PAGES, maxBytes = PageCache.MAX_BYTES) {
    this.#maxPages = maxPages;
    this.#maxBytes = maxBytes;
  }

  /** Bytes of page bodies held. */
  get bytes(): number {
    return this.#bytes;
  }

  get size(): number {
    return this.#pages.size;
  }

  get(key: string, store: PageVersion): CachedPage | undefined {
    const page = this.#pages.get(key);
    if (page === undefined || page.generation !== store.generation) return undefined;
    if (page.nextAfter === undefined && page.count !== store.count) return undefined;
    page.used = true;
    return page;
  }

  set(key: string, page: CachedPage): void {
    const size = page.body.length;
    this.#drop(key);
    if (size > this.#maxBytes) return; // would evict everything else for one page
    while (this.#pages.size >= this.#maxPages || this.#bytes + size > this.#maxBytes) this.#evictOne();
    page.used = false;
    this.#pages.set(key, page);
    this.#bytes += size;
  }

  #drop(key: string): void {
    const page = this.#pages.get(key);
    if (page === undefined) return;
    this.#pages.delete(key);
    this.#bytes -= page.body.length;
  }

  /** Drops the least recently used page (CLOCK): used ones get a second chance at the back. */
  #evictOne(): void {
    for (const [key, page] of this.#pages) {
      this.#pages.delete(key);
      if (page.used === true) {
        page.used = false;
        this.#pages.set(key, page);
        continue;
      }
      this.#bytes -= page.body.length;
      return;
    }
  }
}

export interface Parameter {
  readonly name: string;
  readonly in: 'query' | 'path';
  readonly required: boolean;
  readonly schema: Schema;
}

export interface RouteSpec {
  readonly operationId: string;
  readonly method: 'GET' | 'POST';
  /** Relative to the /v1 base. */
  readonly path: string;
  readonly summary: string;
  readonly tags: readonly string[];
  /** 'key': a bearer key is required; 'none': public, limited per client address. */
  readonly auth: 'key' | 'none';
  readonly deprecated?: { readonly sunset: string; readonly successor: string };
  readonly parameters: readonly Parameter[];
  readonly requestBody?: Schema;
  /** Status code -> description and body schema (undefined: a free-form JSON object; 'OpenApi': the document's own). */
  readonly responses: Readonly<Record<number, { readonly description: string; readonly schema?: Schema | 'Error' | 'OpenApi' }>>;
  /**
   * The answer, or an ApiError for the Error body. Hot paths return their ApiError rather
   * than throw it (see schemas.ts); a throw is answered the same way.
   */
  readonly handler: (ctx: HandlerContext) => Reply | ApiError | Promise<Reply | ApiError>;
}

/** A listing as a JSON array, joined from the JSON text each pet was stored with. */
function petArray(items: readonly StoredPet[]): string {
  if (items.length === 0) return '[]';
  let out = '[';
  for (let i = 0; i < items.length; i++) out += (i === 0 ? '' : ',') + (items[i] as StoredPet).json;
  return `${out}]`;
}

/** RFC 8288 link to the next page, carrying every filter over. */
function nextLink(base: string, limit: number, status: string | undefined, cursor: number): string {
  const filter = status === undefined ? '' : `&status=${status}`;
  return `<${base}/pets?limit=${limit}${filter}&cursor=${cursor}>; rel="next"`;
}

const listPets: RouteSpec = {
  operationId: 'listPets',
  method: 'GET',
  path: '/pets',
  summary: 'List animals, in ascending id order, optionally filtered by status.',
  tags: ['Pets'],
  auth: 'key',
  parameters: [
    { name: 'limit', in: 'query', required: false, schema: limitSchema },
    { name: 'status', in: 'query', required: false, schema: petStatusSchema },
    { name: 'cursor', in: 'query', required: false, schema: cursorSchema },
  ],
  responses: {
    200: {
      description: 'A page of animals. When more follow, `Link: <...>; rel="next"` (RFC 8288) gives the next page, filters carried over; the last page has none.',
      schema: { type: 'array', items: petSchema },
    },
    400: { description: 'limit, status or cursor is not valid (or given twice).', schema: 'Error' },
  },
  handler(ctx) {
    const params = parseListQuery(ctx.query);
    if (params instanceof ApiError) return params;
    const { limit, status, afterId } = params;
    const pages = ctx.pages;
    // One pet more than the page shows tells whether a next page exists, so the last page
    // carries no next link even when it is exactly full.
    const query = { limit: limit + 1, status, afterId };
    if (pages === undefined) {
      // A store without a page version: every page is read afresh.
      const items = ctx.store.list(query);
      if (items instanceof Promise) return items.then((found) => pageReply(ctx.base, params, makePage(found, limit, 0, 0)));
      return pageReply(ctx.base, params, makePage(items, limit, 0, 0));
    }
    const key = `${limit}|${status ?? ''}|${afterId ?? 0}`;
    const { cache, version } = pages;
    const page = cache.get(key, version);
    if (page !== undefined) return pageReply(ctx.base, params, page);
    // Read before the list: a page is never stamped newer than what it shows.
    const { generation, count } = version;
    const items = ctx.store.list(query);
    if (items instanceof Promise) {
      return items.then((found) => pageReply(ctx.base, params, cached(cache, key, makePage(found, limit, generation, count))));
    }
    return pageReply(ctx.base, params, cached(cache, key, makePage(items, limit, generation, count)));
  },
};

/** A page from a listing of up to limit + 1 pets (the one more only says that more follow). */
function makePage(items: StoredPet[], limit: number, generation: number, count: number): CachedPage {
  const more = items.length > limit;
  if (more) items.length = limit;
  const nextAfter = more ? items[items.length - 1]?.pet.id : undefined;
  return { generation, count, body: Buffer.from(petArray(items)), nextAfter };
}

function cached(cache: PageCache, key: string, page: CachedPage): CachedPage {
  cache.set(key, page);
  return page;
}

function pageReply(base: string, params: { limit: number; status?: string | undefined }, page: CachedPage): Reply {
  if (page.nextAfter === undefined) return { status: 200, body: page.body };
  if (page.link?.base !== base) page.link = { base, value: nextLink(base, params.limit, params.status, page.nextAfter) };
  return { status: 200, body: page.body, headers: { link: page.link.value } };
}

const createPet: RouteSpec = {
  operationId: 'createPet',
  method: 'POST',
  path: '/pets',
  summary: 'Add an animal. Answered only once it is on disk.',
  tags: ['Pets'],
  auth: 'key',
  parameters: [],
  requestBody: newPetSchema,
  responses: {
    201: { description: 'The created animal, with its assigned id.', schema: petSchema },
    400: { description: 'The body is missing required fields or has invalid values.', schema: 'Error' },
    413: { description: 'The body is larger than the configured maximum.', schema: 'Error' },
    415: { description: 'The body is not application/json.', schema: 'Error' },
    501: { description: 'The body has a transfer coding other than chunked (gzip, ...); nothing was added.', schema: 'Error' },
    503: { description: 'The store cannot write right now, its write queue is full, or too many bodies are arriving at once; nothing was added.', schema: 'Error' },
  },
  async handler({ req, res, store, maxBodyBytes, base, bodies, config }) {
    const pet = parseNewPet(await readJsonBody(req, maxBodyBytes, { res, bodies, maxPending: config.maxPendingBodyBytes }));
    const stored = await store.create(pet);
    return { status: 201, body: stored.json, headers: { location: `${base}/pets/${stored.pet.id}` } };
  },
};

const getPet: RouteSpec = {
  operationId: 'getPet',
  method: 'GET',
  path: '/pets/{petId}',
  summary: 'Retrieve one animal by id. Deprecated: use GET /pets with the status filter.',
  tags: ['Pets'],
  auth: 'key',
  deprecated: { sunset: 'Thu, 05 Dec 2030 00:00:00 GMT', successor: '/pets' },
  parameters: [{ name: 'petId', in: 'path', required: true, schema: petIdSchema }],
  responses: {
    200: { description: 'The animal.', schema: petSchema },
    400: { description: 'petId is not a 64-bit integer.', schema: 'Error' },
    404: { description: 'The animal cannot be found.', schema: 'Error' },
  },
  handler({ params, store }) {
    const raw = params.petId ?? '';
    const id = parsePetId(raw);
    if (id instanceof ApiError) return id;
    const found = store.get(id);
    if (found instanceof Promise) return found.then((pet) => petReply(pet, raw));
    return petReply(found, raw);
  },
};

function petReply(found: StoredPet | undefined, raw: string): Reply | ApiError {
  if (found === undefined) return new ApiError('not_found', `Pet ${raw} was not found.`);
  return { status: 200, body: found.json };
}

const listOrders: RouteSpec = {
  operationId: 'listOrders',
  method: 'GET',
  path: '/store/orders',
  summary: 'The store orders listing. Its shape is not published, so it answers 501.',
  tags: ['Store'],
  auth: 'key',
  parameters: [],
  responses: { 501: { description: 'Not implemented: the operation exists but its shape is not published.', schema: 'Error' } },
  handler() {
    return new ApiError('not_implemented', 'GET /store/orders is not implemented: its shape is not published.');
  },
};

export const ROUTES: readonly RouteSpec[] = [listPets, createPet, getPet, listOrders];

/**
 * GET /openapi.json: public (limited per client address like keyless requests). The document
 * is built once per config in force and base URL (its first server is the serving instance),
 * and rebuilt after a reload or when asked for under another base URL.
 */
export function openApiRoute(routes: readonly RouteSpec[], version: string): RouteSpec {
  let cache: { config: Config; base: string; body: string } | undefined;
  const route: RouteSpec = {
    operationId: 'getOpenApi',
    method: 'GET',
    path: '/openapi.json',
    summary: 'This API described as OpenAPI 3.1. Needs no key.',
    tags: ['Meta'],
    auth: 'none',
    parameters: [],
    responses: { 200: { description: 'The OpenAPI document.', schema: 'OpenApi' } },
    handler({ config, base }) {
      if (cache?.config !== config || cache.base !== base) {
        // Indented, so that linters and readers get meaningful line numbers.
        cache = { config, base, body: JSON.stringify(openApiDocument([...routes, route], config, version, base), null, 2) };
      }
      return { status: 200, body: cache.body };
    },
  };
  return route;
}
