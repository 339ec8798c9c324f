// Benchmark peer on the shared backends: the stack a Node developer would assemble for the
// petstore contract with pets in PostgreSQL and limits in Redis. Fastify 5 with route schemas
// (as peers/fastify.mjs), postgres.js for the pets, and rate-limiter-flexible's
// RateLimiterRedis for the two windows of each key and of the keyless per-address budget.
//
//   node peers/fastify-stack.mjs --config bench.config.json --store postgres://... --limits redis://... [--port 0] [--reset]
//
// Same answers as petstore where the checks look (auth, validation, Error bodies, both limits
// with X-RateLimit-* and RateLimit headers, deprecation headers, cursors, a 201 only after the
// commit), with the differences such a stack has:
// - Limits are rate-limiter-flexible's fixed windows (60 s and 86,400 s), not token buckets:
//   a window's points all come back at its end. Both are consumed in turn (two Redis round
//   trips); a refusal by the day window gives the minute's point back (a third).
// - The ban (ban.after 429s in a row, then ban.seconds) is kept in process memory.
// - Ids are visible in order: each insert takes one advisory lock, held to its commit, in the
//   same statement (one round trip), so a page never shows an id while a lower one can appear.
//   --reset empties its table at start (the checks count ids from 1).
import Fastify from 'fastify';
import postgres from 'postgres';
import { Redis } from 'ioredis';
import { RateLimiterRedis } from 'rate-limiter-flexible';
import {
  BODY_LIMIT, HttpError, LIMIT_DEFAULT, NAME_MAX_LENGTH, PET_STATUSES, STATUS_OF,
  announce, authenticate, baseHeaders, deprecationHeaders, discardBody, errorBody, loadConfig, nextLink, parsePetId, wwwAuthenticate,
} from './common.mjs';

function parseArgs(argv = process.argv.slice(2)) {
  const opts = { config: undefined, store: undefined, limits: undefined, port: 0, host: '127.0.0.1', reset: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--config') opts.config = argv[++i];
    else if (arg === '--store') opts.store = argv[++i];
    else if (arg === '--limits') opts.limits = argv[++i];
    else if (arg === '--port') opts.port = Number(argv[++i]);
    else if (arg === '--host') opts.host = argv[++i];
    else if (arg === '--reset') opts.reset = true;
    // The harness's start passes one of these for the in-process peers; pets live in PostgreSQL here.
    else if (arg === '--memory') continue;
    else if (arg === '--data') i++;
    else if (arg === '--log-level') i++; // nothing is logged
    else throw new Error(`unknown argument ${arg}`);
  }
  if (!opts.config || !opts.store || !opts.limits) throw new Error('--config FILE, --store URL and --limits URL are required');
  return opts;
}

const opts = parseArgs();
const config = loadConfig(opts.config);
const sql = postgres(opts.store, { max: 4, onnotice: () => undefined });
const redis = new Redis(opts.limits, { enableOfflineQueue: true });
let base = ''; // http://host:port/v1, known once listening

// ------------------------------------------------------------------ pets in PostgreSQL

const TABLE = 'peer_pets';
await sql.unsafe(`CREATE TABLE IF NOT EXISTS ${TABLE} (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  name text NOT NULL, category_id bigint NOT NULL, status text
)`);
await sql.unsafe(`CREATE INDEX IF NOT EXISTS ${TABLE}_status_id ON ${TABLE} (status, id)`);
if (opts.reset) await sql.unsafe(`TRUNCATE ${TABLE} RESTART IDENTITY`);

const ORDER_LOCK = 0x70656572; // "peer"

function petOf(row) {
  const pet = { id: Number(row.id), name: row.name, categoryId: Number(row.category_id) };
  if (row.status !== null) pet.status = row.status;
  return pet;
}

const store = {
  async list({ status, limit, afterId = 0 }) {
    const rows = status === undefined
      ? await sql`SELECT id, name, category_id, status FROM peer_pets WHERE id > ${afterId} ORDER BY id LIMIT ${limit}`
      : await sql`SELECT id, name, category_id, status FROM peer_pets WHERE status = ${status} AND id > ${afterId} ORDER BY id LIMIT ${limit}`;
    return rows.map(petOf);
  },
  async get(id) {
    const rows = await sql`SELECT id, name, category_id, status FROM peer_pets WHERE id = ${id}`;
    return rows.length === 0 ? undefined : petOf(rows[0]);
  },
  async create({ name, categoryId, status }) {
    // One statement, its own transaction: the lock is taken before the id is drawn and held to
    // the commit; postgres.js resolves after the commit.
    const rows = await sql`WITH l AS (SELECT pg_advisory_xact_lock(${ORDER_LOCK}))
      INSERT INTO peer_pets (name, category_id, status) SELECT ${name}, ${categoryId}, ${status ?? null} FROM l RETURNING id`;
    const pet = { id: Number(rows[0].id), name, categoryId };
    if (status !== undefined) pet.status = status;
    return pet;
  },
};

// ------------------------------------------------------------------ limits in Redis

const WINDOWS = [['minute', 'perMinute', 60], ['day', 'perDay', 86400]];
const limiters = new Map(); // "kind:perMinute:perDay" -> { minute, day, limits }
const bans = new Map(); // id -> { strikes, bannedUntil }, in this process

function limitersFor(kind, limits) {
  const name = `${kind}:${limits.perMinute}:${limits.perDay}`;
  let pair = limiters.get(name);
  if (pair === undefined) {
    pair = { limits };
    for (const [window, field, duration] of WINDOWS) {
      pair[window] = new RateLimiterRedis({ storeClient: redis, keyPrefix: `peer:${name}:${window}`, points: limits[field], duration });
    }
    limiters.set(name, pair);
  }
  return pair;
}

/** rate-limiter-flexible's result or refusal (a RateLimiterRes either way; an Error is Redis failing). */
async function consume(limiter, id) {
  try {
    return { ok: true, res: await limiter.consume(id) };
  } catch (res) {
    if (res instanceof Error) throw res;
    return { ok: false, res };
  }
}

function rateHeaders(pair, minute, day, retryAfter) {
  const binding = day.remainingPoints < minute.remainingPoints ? ['day', day, pair.limits.perDay] : ['minute', minute, pair.limits.perMinute];
  const [name, res, capacity] = binding;
  const remaining = retryAfter === undefined ? res.remainingPoints : 0;
  const seconds = Math.max(1, Math.ceil(res.msBeforeNext / 1000));
  const headers = {
    'X-RateLimit-Limit': String(capacity),
    'X-RateLimit-Remaining': String(remaining),
    'X-RateLimit-Reset': String(Math.ceil((Date.now() + res.msBeforeNext) / 1000)),
    'RateLimit-Policy': `"minute";q=${pair.limits.perMinute};w=60, "day";q=${pair.limits.perDay};w=86400`,
    RateLimit: `"${name}";r=${remaining};t=${retryAfter ?? seconds}`,
  };
  if (retryAfter !== undefined) headers['Retry-After'] = String(retryAfter);
  return headers;
}

async function take(kind, id, limits) {
  const pair = limitersFor(kind, limits);
  const key = `${kind}:${id}`;
  const ban = bans.get(key);
  const now = Date.now();
  const minute = await consume(pair.minute, id);
  let day = minute.ok ? await consume(pair.day, id) : { ok: false, res: await pair.day.get(id) };
  if (minute.ok && !day.ok) await pair.minute.reward(id, 1);
  if (day.res === null) day = { ok: true, res: { remainingPoints: limits.perDay, msBeforeNext: 0 } };
  if (ban !== undefined && ban.bannedUntil > now) {
    if (minute.ok && day.ok) {
      await pair.minute.reward(id, 1);
      await pair.day.reward(id, 1);
    }
    const retryAfter = Math.ceil((ban.bannedUntil - now) / 1000);
    return { allowed: false, code: 'temporarily_banned', headers: rateHeaders(pair, minute.res, day.res, retryAfter) };
  }
  if (minute.ok && day.ok) {
    if (ban !== undefined) bans.delete(key);
    return { allowed: true, headers: rateHeaders(pair, minute.res, day.res) };
  }
  const strikes = (ban?.strikes ?? 0) + 1;
  if (strikes > config.ban.after + 1) {
    bans.set(key, { strikes: 0, bannedUntil: now + config.ban.seconds * 1000 });
    return { allowed: false, code: 'temporarily_banned', headers: rateHeaders(pair, minute.res, day.res, config.ban.seconds) };
  }
  if (bans.size > 10_000 && ban === undefined) bans.delete(bans.keys().next().value);
  bans.set(key, { strikes, bannedUntil: 0 });
  const waitMs = Math.max(minute.ok ? 0 : minute.res.msBeforeNext, day.ok ? 0 : day.res.msBeforeNext);
  return { allowed: false, code: 'rate_limited', headers: rateHeaders(pair, minute.res, day.res, Math.max(1, Math.ceil(waitMs / 1000))) };
}

// ------------------------------------------------------------------ the app (as peers/fastify.mjs)

const petSchema = {
  type: 'object',
  required: ['id', 'name', 'categoryId'],
  properties: { id: { type: 'integer' }, name: { type: 'string' }, categoryId: { type: 'integer' }, status: { type: 'string', enum: PET_STATUSES } },
};
const newPetSchema = {
  type: 'object',
  required: ['name', 'categoryId'],
  properties: {
    name: { type: 'string', minLength: 1, maxLength: NAME_MAX_LENGTH },
    categoryId: { type: 'integer', minimum: Number.MIN_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER },
    status: { type: 'string', enum: PET_STATUSES },
  },
};
const errorSchema = {
  type: 'object',
  required: ['code', 'message', 'status'],
  properties: { code: { type: 'string' }, message: { type: 'string' }, status: { type: 'integer' } },
};
const errorResponses = { '4xx': errorSchema, '5xx': errorSchema };

const app = Fastify({
  logger: false,
  bodyLimit: BODY_LIMIT,
  ajv: { customOptions: { coerceTypes: false } },
  onProtoPoisoning: 'remove',
  onConstructorPoisoning: 'remove',
});
app.removeContentTypeParser('text/plain');

app.addHook('onRequest', async (request, reply) => {
  reply.headers(baseHeaders());
  if (request.routeOptions.url === '/v1/pets/:petId') reply.headers(deprecationHeaders(base));
  const auth = authenticate(config, request.headers.authorization);
  const result = auth.key
    ? await take('key', auth.key.id, auth.key.limits)
    : await take('address', request.ip, config.anonymous);
  reply.headers(result.headers);
  if (!result.allowed) throw new HttpError(result.code, 'Rate limit exceeded; retry after the time in Retry-After.');
  if (auth.error) {
    throw new HttpError('unauthorized', 'A valid API key is required: Authorization: Bearer <key>.', { 'WWW-Authenticate': wwwAuthenticate(auth.error) });
  }
});

app.setErrorHandler(async (error, request, reply) => {
  let code;
  let message = error.message;
  if (error instanceof HttpError) {
    code = error.code;
    reply.headers(error.headers);
  } else if (error.validation) {
    code = 'invalid_request';
  } else if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    code = 'payload_too_large';
    if (!(await discardBody(request.raw))) reply.header('Connection', 'close');
  } else if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
    code = 'unsupported_media_type';
    message = 'The request body must be application/json.';
  } else if (error.statusCode === 400) {
    code = 'invalid_request';
  } else {
    // The database or Redis failed: nothing was done.
    reply.code(503).header('Retry-After', '1');
    return { code: 'service_unavailable', message: 'The service cannot answer now.', status: 503 };
  }
  reply.code(STATUS_OF[code]);
  return errorBody(code, message);
});

app.setNotFoundHandler((request, reply) => {
  reply.code(404).send(errorBody('not_found', `No route for ${request.method} ${request.url.split('?')[0]}.`));
});

app.get('/v1/pets', {
  schema: {
    querystring: {
      type: 'object',
      properties: {
        limit: { type: 'string', pattern: '^(?:[1-9][0-9]?|100)$' },
        status: { type: 'string', enum: PET_STATUSES },
        cursor: { type: 'string', pattern: '^[0-9]{1,16}$' },
      },
    },
    response: { 200: { type: 'array', items: petSchema }, ...errorResponses },
  },
}, async (request, reply) => {
  const limit = request.query.limit === undefined ? LIMIT_DEFAULT : Number(request.query.limit);
  const { status } = request.query;
  const afterId = request.query.cursor === undefined ? undefined : Number(request.query.cursor);
  const pets = await store.list({ status, limit, afterId });
  if (pets.length === limit) reply.header('Link', nextLink(base, { limit, status }, pets.at(-1).id));
  return pets;
});

app.post('/v1/pets', { schema: { body: newPetSchema, response: { 201: petSchema, ...errorResponses } } }, async (request, reply) => {
  const { name, categoryId, status } = request.body;
  if (name.trim() === '') throw new HttpError('invalid_request', 'Invalid pet: name must not be blank.');
  const pet = await store.create({ name, categoryId, status });
  reply.code(201).header('Location', `${base}/pets/${pet.id}`);
  return pet;
});

app.get('/v1/pets/:petId', {
  schema: { params: { type: 'object', properties: { petId: { type: 'string' } } }, response: { 200: petSchema, ...errorResponses } },
}, async (request) => {
  const id = parsePetId(request.params.petId);
  const found = id === undefined ? undefined : await store.get(id);
  if (!found) throw new HttpError('not_found', `Pet ${request.params.petId} was not found.`);
  return found;
});

await app.listen({ port: opts.port, host: opts.host });
base = `http://${opts.host}:${app.server.address().port}/v1`;
announce(app.server, opts.host);

for (const signal of ['SIGTERM', 'SIGINT']) {
  process.once(signal, async () => {
    await app.close();
    await sql.end({ timeout: 5 });
    redis.disconnect();
    process.exit(0);
  });
}
