// Benchmark peer: the petstore contract for GET/POST /v1/pets and GET /v1/pets/:petId on
// Fastify 5, written the way the Fastify docs suggest: route JSON schemas (so Ajv validates
// input and fast-json-stringify serializes output), one onRequest hook for auth and rate
// limits, one error handler that turns every failure into petstore's Error body.
//
// With --log, Fastify's own request logger is on (pino, level info, to stdout: an "incoming
// request" and a "request completed" line per request), as a user would ship it.
//
//   node peers/fastify.mjs --config bench.config.json (--data FILE | --memory) [--port 0] [--log]
import Fastify from 'fastify';
import {
  BODY_LIMIT,
  HttpError,
  LIMIT_DEFAULT,
  NAME_MAX_LENGTH,
  PET_STATUSES,
  RateLimiter,
  STATUS_OF,
  announce,
  authenticate,
  baseHeaders,
  discardBody,
  deprecationHeaders,
  errorBody,
  loadConfig,
  nextLink,
  openStore,
  parseArgs,
  parsePetId,
  wwwAuthenticate,
} from './common.mjs';

const withLog = process.argv.includes('--log');
const opts = parseArgs(process.argv.slice(2).filter((a) => a !== '--log'));
const config = loadConfig(opts.config);
const limiter = new RateLimiter(config);
const store = await openStore(opts);
let base = ''; // http://host:port/v1, known once listening

const petSchema = {
  type: 'object',
  required: ['id', 'name', 'categoryId'],
  properties: {
    id: { type: 'integer' },
    name: { type: 'string' },
    categoryId: { type: 'integer' },
    status: { type: 'string', enum: PET_STATUSES },
  },
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
  logger: withLog,
  bodyLimit: BODY_LIMIT,
  // Query values stay strings (so "1e1" or a repeated parameter is not coerced into a valid
  // limit) and JSON bodies keep their types ("5" is not a categoryId).
  ajv: { customOptions: { coerceTypes: false } },
  // A "__proto__" or "constructor.prototype" key in a body is dropped, never applied.
  onProtoPoisoning: 'remove',
  onConstructorPoisoning: 'remove',
});
// Only JSON bodies are accepted: without the built-in text/plain parser, any other content
// type gets Fastify's 415 (FST_ERR_CTP_INVALID_MEDIA_TYPE).
app.removeContentTypeParser('text/plain');

// Authentication and the two token buckets, for every request (404s included).
app.addHook('onRequest', async (request, reply) => {
  reply.headers(baseHeaders());
  if (request.routeOptions.url === '/v1/pets/:petId') reply.headers(deprecationHeaders(base));
  const auth = authenticate(config, request.headers.authorization);
  const limit = auth.key ? limiter.forKey(auth.key) : limiter.forAddress(request.ip);
  const result = limiter.take(limit);
  reply.headers(result.headers);
  if (!result.allowed) {
    throw new HttpError(result.code, 'Rate limit exceeded; retry after the time in Retry-After.');
  }
  if (auth.error) {
    throw new HttpError('unauthorized', 'A valid API key is required: Authorization: Bearer <key>.', {
      'WWW-Authenticate': wwwAuthenticate(auth.error),
    });
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
    // Fastify stops reading the upload here; drain it so the client sees the 413.
    if (!(await discardBody(request.raw))) reply.header('Connection', 'close');
  } else if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
    code = 'unsupported_media_type';
    message = 'The request body must be application/json.';
  } else if (error.statusCode === 400) {
    code = 'invalid_request'; // empty or malformed JSON body
  } else {
    code = 'internal_error';
    message = 'Internal error.';
  }
  reply.code(STATUS_OF[code]);
  return errorBody(code, message);
});

app.setNotFoundHandler((request, reply) => {
  reply.code(404).send(errorBody('not_found', `No route for ${request.method} ${request.url.split('?')[0]}.`));
});

app.get(
  '/v1/pets',
  {
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
  },
  async (request, reply) => {
    const limit = request.query.limit === undefined ? LIMIT_DEFAULT : Number(request.query.limit);
    const { status } = request.query;
    const afterId = request.query.cursor === undefined ? undefined : Number(request.query.cursor);
    const items = store.list({ status, limit, afterId });
    if (items.length === limit) reply.header('Link', nextLink(base, { limit, status }, items.at(-1).pet.id));
    return items.map((item) => item.pet);
  },
);

app.post(
  '/v1/pets',
  { schema: { body: newPetSchema, response: { 201: petSchema, ...errorResponses } } },
  async (request, reply) => {
    const { name, categoryId, status } = request.body;
    if (name.trim() === '') throw new HttpError('invalid_request', 'Invalid pet: name must not be blank.');
    const newPet = { name, categoryId };
    if (status !== undefined) newPet.status = status;
    const { pet } = await store.create(newPet); // resolves once the pet is on disk
    reply.code(201).header('Location', `${base}/pets/${pet.id}`);
    return pet;
  },
);

app.get(
  '/v1/pets/:petId',
  {
    schema: {
      params: { type: 'object', properties: { petId: { type: 'string' } } },
      response: { 200: petSchema, ...errorResponses },
    },
  },
  async (request) => {
    const id = parsePetId(request.params.petId);
    const found = id === undefined ? undefined : store.get(id);
    if (!found) throw new HttpError('not_found', `Pet ${request.params.petId} was not found.`);
    return found.pet;
  },
);

await app.listen({ port: opts.port, host: opts.host });
base = `http://${opts.host}:${app.server.address().port}/v1`;
announce(app.server, opts.host);

for (const signal of ['SIGTERM', 'SIGINT']) {
  process.once(signal, async () => {
    await app.close();
    await store.close();
    process.exit(0);
  });
}
