// Benchmark peer: the "one fsync per create" reference. Bare node:http with the same auth,
// rate limits and validation as the other peers, whose POST /v1/pets appends one JSON line to
// the data file and calls fdatasync for that create alone (no group commit) before the 201.
// GET /v1/pets answers from memory so that the harness can check it.
//
//   node peers/fsync-baseline.mjs --config bench.config.json (--data FILE | --memory) [--port 0]
import { open } from 'node:fs/promises';
import { createServer } from 'node:http';
import {
  BODY_LIMIT,
  HttpError,
  RateLimiter,
  announce,
  authenticate,
  baseHeaders,
  discardBody,
  errorBody,
  loadConfig,
  nextLink,
  parseArgs,
  parseCursor,
  parseLimit,
  parseNewPet,
  parseStatus,
  wwwAuthenticate,
} from './common.mjs';

const opts = parseArgs();
const config = loadConfig(opts.config);
const limiter = new RateLimiter(config);
const file = opts.memory ? undefined : await open(opts.data, 'a');
const pets = [];
let base = '';

function send(res, status, body, headers = {}) {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    ...baseHeaders(),
    ...headers,
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(text),
  });
  res.end(text);
}

/** The body as a string, or an HttpError; never more than BODY_LIMIT bytes in memory. */
function readBody(req) {
  const tooLarge = async () => {
    // Discard the rest so that the client sees the 413 (past a cap: close after the answer).
    const whole = await discardBody(req);
    return new HttpError('payload_too_large', `The request body is larger than ${BODY_LIMIT} bytes.`, whole ? {} : { Connection: 'close' });
  };
  return new Promise((resolve, reject) => {
    if (Number(req.headers['content-length']) > BODY_LIMIT) return tooLarge().then(reject);
    const chunks = [];
    let size = 0;
    const onData = (chunk) => {
      size += chunk.length;
      if (size > BODY_LIMIT) {
        req.off('data', onData);
        req.off('end', onEnd);
        chunks.length = 0;
        tooLarge().then(reject);
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => resolve(Buffer.concat(chunks).toString('utf8'));
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', reject);
  });
}

async function createPet(req, res, rate) {
  const type = (req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
  if (type !== 'application/json') {
    req.resume();
    throw new HttpError('unsupported_media_type', 'The request body must be application/json.');
  }
  const text = await readBody(req);
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    throw new HttpError('invalid_request', 'The request body is not valid JSON.');
  }
  const pet = { id: pets.length + 1, ...parseNewPet(body) };
  pets.push(pet);
  const json = JSON.stringify(pet);
  if (file) {
    await file.write(`${json}\n`);
    await file.datasync(); // one flush for this create alone
  }
  send(res, 201, pet, { ...rate, Location: `${base}/pets/${pet.id}` });
}

function listPets(req, res, rate) {
  const query = new URL(req.url, 'http://x').searchParams;
  const one = (name) => {
    const all = query.getAll(name);
    return all.length === 0 ? undefined : all.length === 1 ? all[0] : all;
  };
  const limit = parseLimit(one('limit'));
  const status = parseStatus(one('status'));
  const afterId = parseCursor(one('cursor')) ?? 0;
  const page = pets.filter((p) => p.id > afterId && (!status || p.status === status)).slice(0, limit);
  const headers = { ...rate };
  if (page.length === limit) headers.Link = nextLink(base, { limit, status }, page.at(-1).id);
  send(res, 200, page, headers);
}

const server = createServer(async (req, res) => {
  let rate = {};
  try {
    const auth = authenticate(config, req.headers.authorization);
    const result = limiter.take(auth.key ? limiter.forKey(auth.key) : limiter.forAddress(req.socket.remoteAddress));
    rate = result.headers;
    if (!result.allowed) throw new HttpError(result.code, 'Rate limit exceeded; retry after the time in Retry-After.');
    if (auth.error) {
      throw new HttpError('unauthorized', 'A valid API key is required: Authorization: Bearer <key>.', {
        'WWW-Authenticate': wwwAuthenticate(auth.error),
      });
    }
    const path = req.url.split('?')[0];
    if (path === '/v1/pets' && req.method === 'POST') await createPet(req, res, rate);
    else if (path === '/v1/pets' && req.method === 'GET') listPets(req, res, rate);
    else throw new HttpError('not_found', `No route for ${req.method} ${path}.`);
  } catch (err) {
    if (!(err instanceof HttpError)) {
      console.error(err);
      err = new HttpError('internal_error', 'Internal error.');
    }
    send(res, err.status, errorBody(err.code, err.message), { ...rate, ...err.headers });
  }
});

server.listen(opts.port, opts.host, () => {
  base = `http://${opts.host}:${server.address().port}/v1`;
  announce(server, opts.host);
});

for (const signal of ['SIGTERM', 'SIGINT']) {
  process.once(signal, () => {
    server.close(async () => {
      await file?.close();
      process.exit(0);
    });
    server.closeIdleConnections();
  });
}
