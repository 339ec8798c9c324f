// The route table: each operation as data (path, method, parameters, responses) plus its
// handler. The app dispatches from it and the OpenAPI document is generated from it.
import { ApiError } from '../core/index.js';
import type { StoredPet } from '../store/index.js';
import type { Reply, RouteSpec } from './contract.js';
import { IDEMPOTENCY_HEADER, IDEMPOTENCY_KEY_DESCRIPTION, createOnce, idempotencyKeySchema } from './idempotency-key.js';
import { MAX_KEPT_LINK, type CachedPage, type PageCache, type PetCache } from './page-cache.js';
import {
  cursorSchema, limitSchema, newPetSchema, parseListQuery, parseNewPet, parsePetId, petIdSchema, petSchema, plainPetId,
  petStatusSchema,
} from './schemas.js';

/** A listing as a JSON array, joined from the JSON text each pet was stored with. */
function petArray(items: readonly StoredPet[], n: number): string {
  if (n === 0) return '[]';
  let out = '[';
  for (let i = 0; i < n; i++) out += (i === 0 ? '' : ',') + (items[i] as StoredPet).json;
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
    503: { description: 'The database cannot be reached (PostgreSQL store only); retry after Retry-After seconds.', schema: 'Error' },
  },
  handler(ctx) {
    const pages = ctx.pages;
    // A hit is found from the query string as sent, before any parsing: only valid queries
    // are ever cached, and the same text always asks for the same page.
    const hit = pages?.cache.get(ctx.rawQuery, pages.version);
    if (hit !== undefined) return pageReply(ctx.base, hit);
    const params = parseListQuery(ctx.query);
    if (params instanceof ApiError) return params;
    const { limit, status, afterId } = params;
    // One pet more than the page shows tells whether a next page exists, so the last page
    // carries no next link even when it is exactly full.
    const query = { limit: limit + 1, status, afterId };
    if (pages === undefined) {
      // A store without a page version: every page is read afresh.
      const items = ctx.store.list(query);
      if (items instanceof Promise) return items.then((found) => pageReply(ctx.base, makePage(found, params, 0, 0)));
      return pageReply(ctx.base, makePage(items, params, 0, 0));
    }
    const { cache, version } = pages;
    const key = ctx.rawQuery;
    // Read before the list: a page is never stamped newer than what it shows.
    const { generation, count } = version;
    const items = ctx.store.list(query);
    if (items instanceof Promise) {
      return items.then((found) => pageReply(ctx.base, cached(cache, key, makePage(found, params, generation, count))));
    }
    return pageReply(ctx.base, cached(cache, key, makePage(items, params, generation, count)));
  },
};

/** A page from a listing of up to limit + 1 pets (the one more only says that more follow). */
function makePage(items: StoredPet[], params: { limit: number; status?: string | undefined }, generation: number, count: number): CachedPage {
  const { limit, status } = params;
  // The one more pet tells that more follow; it is not serialized.
  const more = items.length > limit;
  const nextAfter = more ? items[limit - 1]?.pet.id : undefined;
  // (Every field set here, link and reply too: one object shape for every page.)
  return { generation, count, body: Buffer.from(petArray(items, more ? limit : items.length)), nextAfter, link: undefined, reply: undefined, limit, status };
}

function cached(cache: PageCache, key: string, page: CachedPage): CachedPage {
  cache.set(key, page);
  return page;
}

/** A page's answer, kept with it: a hit under the same base URL allocates nothing. */
function pageReply(base: string, page: CachedPage): Reply {
  if (page.nextAfter === undefined) return (page.reply ??= { status: 200, body: page.body });
  const link = page.link;
  if (link?.base === base) return link.reply;
  const value = nextLink(base, page.limit, page.status, page.nextAfter);
  const reply = { status: 200, body: page.body, headers: { link: value } };
  // Kept only as long as the cache counted room for (a Host header may be long).
  if (value.length <= MAX_KEPT_LINK) page.link = { base, value, reply };
  return reply;
}


const createPet: RouteSpec = {
  operationId: 'createPet',
  method: 'POST',
  path: '/pets',
  summary: 'Add an animal. Answered only once it is on disk.',
  tags: ['Pets'],
  auth: 'key',
  parameters: [
    { name: IDEMPOTENCY_HEADER, in: 'header', required: false, schema: idempotencyKeySchema, description: IDEMPOTENCY_KEY_DESCRIPTION },
  ],
  requestBody: newPetSchema,
  responses: {
    201: { description: 'The created animal, with its assigned id; with an Idempotency-Key already used with the same payload, the animal created then.', schema: petSchema },
    400: { description: 'The body is missing required fields or has invalid values, or the Idempotency-Key is not valid.', schema: 'Error' },
    409: { description: 'A request with the same Idempotency-Key is still being processed; nothing was added.', schema: 'Error' },
    413: { description: 'The body is larger than the configured maximum.', schema: 'Error' },
    415: { description: 'The body is not application/json.', schema: 'Error' },
    422: { description: 'The Idempotency-Key was already used with another payload; nothing was added.', schema: 'Error' },
    501: { description: 'The body has a transfer coding other than chunked (gzip, ...); nothing was added.', schema: 'Error' },
    503: { description: 'The store cannot write right now, its write queue is full, the database cannot be reached, or too many bodies are arriving at once; retry after Retry-After seconds. Nothing was added, except that a create whose database answer timed out may have been committed: retry it with the same Idempotency-Key.', schema: 'Error' },
    507: { description: 'No pet id is left (ids stay within the safe integer range and the largest is taken); nothing was added. Not to be retried: only a reset frees ids.', schema: 'Error' },
  },
  // The Idempotency-Key (declared above) is read and checked by the HTTP layer before the
  // body is read: a bad key is refused without waiting for the upload.
  async handler({ body, idempotencyKey, store, base, scope }) {
    const pet = parseNewPet(body);
    if (idempotencyKey !== undefined) return createOnce(store, pet, idempotencyKey, scope as string, base);
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
    503: { description: 'The database cannot be reached (PostgreSQL store only); retry after Retry-After seconds.', schema: 'Error' },
  },
  handler({ params, store, pets, pages }) {
    const raw = params.petId ?? '';
    // The common form (plain digits) is read by hand; any other is read or refused by parsePetId.
    const plain = plainPetId(raw);
    if (plain !== -1 && pets !== undefined && pages !== undefined) {
      // Pets never change: the bytes of an answer given once stay right until a reset.
      const hit = pets.get(plain, pages.version);
      if (hit !== undefined) return (hit.reply ??= { status: 200, body: hit.body });
    }
    const id = plain !== -1 ? plain : parsePetId(raw);
    if (id instanceof ApiError) return id;
    const generation = pages?.version.generation ?? 0;
    const found = store.get(id);
    // (Only answers to the plain form are cached: the cache is looked up by it alone.)
    const cache = plain !== -1 ? pets : undefined;
    if (found instanceof Promise) return found.then((pet) => petReply(pet, raw, cache, generation));
    return petReply(found, raw, cache, generation);
  },
};

function petReply(found: StoredPet | undefined, raw: string, pets: PetCache | undefined, generation: number): Reply | ApiError {
  if (found === undefined) return new ApiError('not_found', `Pet ${raw} was not found.`);
  if (pets === undefined) return { status: 200, body: found.json };
  const body = Buffer.from(found.json);
  pets.set(found.pet.id, { generation, body, reply: undefined });
  return { status: 200, body };
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

