// Benchmark peer: the petstore contract for GET/POST /v1/pets and GET /v1/pets/:petId on
// Express 5, written as middleware the usual way: express.json() for bodies, one middleware
// for auth and rate limits, async route handlers, one error-handling middleware.
//
//   node peers/express.mjs --config bench.config.json (--data FILE | --memory) [--port 0]
import express from 'express';
import {
  BODY_LIMIT,
  HttpError,
  RateLimiter,
  STATUS_OF,
  announce,
  authenticate,
  baseHeaders,
  deprecationHeaders,
  errorBody,
  loadConfig,
  nextLink,
  openStore,
  parseArgs,
  parseCursor,
  parseLimit,
  parseNewPet,
  parsePetId,
  parseStatus,
  wwwAuthenticate,
} from './common.mjs';

const opts = parseArgs();
const config = loadConfig(opts.config);
const limiter = new RateLimiter(config);
const store = await openStore(opts);
let base = ''; // http://host:port/v1, known once listening

const app = express();
app.disable('x-powered-by');
app.disable('etag'); // the API has no ETag; petstore does not compute one either

// The deprecated operation's headers go on every one of its responses, errors included.
app.all('/v1/pets/:petId', (req, res, next) => {
  res.set(deprecationHeaders(base));
  next();
});

// Authentication and the two token buckets, for every request (404s included).
app.use((req, res, next) => {
  res.set(baseHeaders());
  const auth = authenticate(config, req.get('authorization'));
  const limit = auth.key ? limiter.forKey(auth.key) : limiter.forAddress(req.ip);
  const result = limiter.take(limit);
  res.set(result.headers);
  if (!result.allowed) {
    throw new HttpError(result.code, 'Rate limit exceeded; retry after the time in Retry-After.');
  }
  if (auth.error) {
    throw new HttpError('unauthorized', 'A valid API key is required: Authorization: Bearer <key>.', {
      'WWW-Authenticate': wwwAuthenticate(auth.error),
    });
  }
  next();
});

app.get('/v1/pets', (req, res) => {
  const limit = parseLimit(req.query.limit);
  const status = parseStatus(req.query.status);
  const afterId = parseCursor(req.query.cursor);
  const items = store.list({ status, limit, afterId });
  if (items.length === limit) res.set('Link', nextLink(base, { limit, status }, items.at(-1).pet.id));
  res.json(items.map((item) => item.pet));
});

app.post(
  '/v1/pets',
  (req, res, next) => {
    if (!req.is('application/json')) {
      throw new HttpError('unsupported_media_type', 'The request body must be application/json.');
    }
    next();
  },
  express.json({ limit: BODY_LIMIT }),
  async (req, res) => {
    const newPet = parseNewPet(req.body);
    const { pet } = await store.create(newPet); // resolves once the pet is on disk
    res.status(201).location(`${base}/pets/${pet.id}`).json(pet);
  },
);

app.get('/v1/pets/:petId', (req, res) => {
  const id = parsePetId(req.params.petId);
  const found = id === undefined ? undefined : store.get(id);
  if (!found) throw new HttpError('not_found', `Pet ${req.params.petId} was not found.`);
  res.json(found.pet);
});

app.use((req, res) => {
  res.status(404).json(errorBody('not_found', `No route for ${req.method} ${req.path}.`));
});

// eslint-disable-next-line no-unused-vars -- Express recognises error handlers by arity
app.use((err, req, res, next) => {
  let code;
  let message = err.message;
  if (err instanceof HttpError) {
    code = err.code;
    res.set(err.headers);
  } else if (err.type === 'entity.too.large') {
    code = 'payload_too_large';
    message = `The request body is larger than ${BODY_LIMIT} bytes.`;
  } else if (err.status === 400 || err.type === 'entity.parse.failed') {
    code = 'invalid_request';
    message = 'The request body is not valid JSON.';
  } else if (err.status === 415) {
    code = 'unsupported_media_type';
  } else {
    code = 'internal_error';
    message = 'Internal error.';
  }
  res.status(STATUS_OF[code]).json(errorBody(code, message));
});

const server = app.listen(opts.port, opts.host, () => {
  base = `http://${opts.host}:${server.address().port}/v1`;
  announce(server, opts.host);
});

for (const signal of ['SIGTERM', 'SIGINT']) {
  process.once(signal, () => {
    server.close(async () => {
      await store.close();
      process.exit(0);
    });
    server.closeIdleConnections();
  });
}
