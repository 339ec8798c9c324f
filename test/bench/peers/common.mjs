// Logic shared by the benchmark peers: command line, config, bearer auth, the two token
// buckets per key, the rate-limit headers, validation and the error body.
// Written the way a user of a framework would write it: plain and readable, not tuned.
// Nothing in src/ imports this; it only exists so that the peers implement the same API and
// behaviour as petstore, and the benchmark compares like with like.
import { createHash, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';

export const PET_STATUSES = ['available', 'pending', 'sold'];
export const NAME_MAX_LENGTH = 256;
export const LIMIT_DEFAULT = 20;
export const LIMIT_MAX = 100;
export const BODY_LIMIT = 64 * 1024;

// Deprecation headers of GET /pets/{petId}. Keep DEPRECATION in step with the value petstore sends.
export const DEPRECATION = '@1767225600'; // 2026-01-01T00:00:00Z, as petstore sends
export const SUNSET = 'Thu, 05 Dec 2030 00:00:00 GMT';

const INT64_MAX = 9223372036854775807n;
const INT64_MIN = -9223372036854775808n;

// ---------------------------------------------------------------------------------------------
// Command line: the same flags petstore takes (the ones the benchmark uses).

export function parseArgs(argv = process.argv.slice(2)) {
  const opts = { config: undefined, data: undefined, memory: false, port: 0, host: '127.0.0.1', work: 0 };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--config') opts.config = argv[++i];
    else if (arg === '--data') opts.data = argv[++i];
    else if (arg === '--memory') opts.memory = true;
    else if (arg === '--port') opts.port = Number(argv[++i]);
    else if (arg === '--host') opts.host = argv[++i];
    else if (arg === '--work') opts.work = Number(argv[++i]);
    else throw new Error(`unknown argument ${arg}`);
  }
  if (!opts.config) throw new Error('--config FILE is required');
  if (!opts.memory && !opts.data) throw new Error('give --data FILE or --memory');
  return opts;
}

/** The line petstore prints first once listening; harnesses parse it. */
export function announce(server, host) {
  const { port } = server.address();
  process.stdout.write(`http://${host}:${port}/v1\n`);
}

// ---------------------------------------------------------------------------------------------
// Config (the file format of petstore.config.json): plans + keys, ban, anonymous.

function sha256hex(text) {
  return createHash('sha256').update(text).digest('hex');
}

export function loadConfig(file) {
  const raw = JSON.parse(readFileSync(file, 'utf8'));
  const plans = raw.plans ?? {};
  const keys = new Map(); // sha256 hex of the key -> { name, limits }
  for (const entry of raw.keys ?? []) {
    const limits = entry.limits ?? plans[entry.plan];
    if (!limits) throw new Error(`${file}: key ${entry.name ?? '(unnamed)'} has no limits (plan ${entry.plan})`);
    const hash = entry.sha256 ? entry.sha256.toLowerCase() : sha256hex(entry.key);
    keys.set(hash, { id: hash, name: entry.name ?? entry.plan, limits });
  }
  return {
    keys,
    ban: raw.ban ?? { after: 20, seconds: 300 },
    anonymous: raw.anonymous ?? { perMinute: 30, perDay: 500 },
  };
}

// ---------------------------------------------------------------------------------------------
// Authentication: bearer keys.

/**
 * Returns { key } for a known key, { error } otherwise. Both sides are hashed to a fixed
 * length first; the lookup is by digest, so the comparison does not depend on the key's bytes.
 */
export function authenticate(config, authorization) {
  if (!authorization) return { error: 'missing' };
  const match = /^bearer +(\S+)\s*$/i.exec(authorization);
  if (!match) return { error: 'invalid' };
  const key = config.keys.get(sha256hex(match[1]));
  if (!key) return { error: 'invalid' };
  return { key };
}

export function wwwAuthenticate(error) {
  return error === 'missing' ? 'Bearer realm="petstore"' : 'Bearer realm="petstore", error="invalid_token"';
}

// ---------------------------------------------------------------------------------------------
// Rate limits: a minute bucket and a day bucket per key.

class TokenBucket {
  constructor(name, capacity, windowSeconds) {
    this.name = name;
    this.capacity = capacity;
    this.window = windowSeconds;
    this.ratePerMs = capacity / (windowSeconds * 1000);
    this.tokens = capacity;
    this.updated = performance.now();
  }

  refill(now) {
    this.tokens = Math.min(this.capacity, this.tokens + (now - this.updated) * this.ratePerMs);
    this.updated = now;
  }

  /** Milliseconds until `n` tokens are available. */
  msUntil(n) {
    return this.tokens >= n ? 0 : (n - this.tokens) / this.ratePerMs;
  }
}

class Limit {
  constructor(limits) {
    this.minute = new TokenBucket('minute', limits.perMinute, 60);
    this.day = new TokenBucket('day', limits.perDay, 86400);
    this.rejectedInARow = 0;
    this.bannedUntil = 0;
  }
}

export class RateLimiter {
  constructor(config) {
    this.config = config;
    this.byKey = new Map();
    this.byAddress = new Map(); // bounded: oldest entries dropped past maxAddresses
    this.maxAddresses = 10000;
  }

  forKey(key) {
    let limit = this.byKey.get(key.id);
    if (!limit) {
      limit = new Limit(key.limits);
      this.byKey.set(key.id, limit);
    }
    return limit;
  }

  forAddress(address) {
    let limit = this.byAddress.get(address);
    if (!limit) {
      if (this.byAddress.size >= this.maxAddresses) {
        this.byAddress.delete(this.byAddress.keys().next().value);
      }
      limit = new Limit(this.config.anonymous);
      this.byAddress.set(address, limit);
    }
    return limit;
  }

  /**
   * Takes one token from both buckets if both have one. Returns
   * { allowed, code, headers } where headers are the rate-limit headers for the response.
   */
  take(limit) {
    const now = performance.now();
    const { minute, day } = limit;
    minute.refill(now);
    day.refill(now);

    if (limit.bannedUntil > now) {
      const retryAfter = Math.ceil((limit.bannedUntil - now) / 1000);
      return { allowed: false, code: 'temporarily_banned', headers: rateHeaders(limit, { retryAfter }) };
    }
    if (minute.tokens >= 1 && day.tokens >= 1) {
      minute.tokens -= 1;
      day.tokens -= 1;
      limit.rejectedInARow = 0;
      return { allowed: true, headers: rateHeaders(limit) };
    }
    // The first 429 is a warning; `ban.after` further ones in a row lead to the ban.
    limit.rejectedInARow += 1;
    if (limit.rejectedInARow > this.config.ban.after + 1) {
      limit.bannedUntil = now + this.config.ban.seconds * 1000;
      limit.rejectedInARow = 0;
      return {
        allowed: false,
        code: 'temporarily_banned',
        headers: rateHeaders(limit, { retryAfter: this.config.ban.seconds }),
      };
    }
    const retryAfter = Math.max(1, Math.ceil(Math.max(minute.msUntil(1), day.msUntil(1)) / 1000));
    return { allowed: false, code: 'rate_limited', headers: rateHeaders(limit, { retryAfter }) };
  }
}

/** The bucket that binds: fewer whole tokens left; the minute bucket on a tie. */
function bindingBucket(limit) {
  return Math.floor(limit.day.tokens) < Math.floor(limit.minute.tokens) ? limit.day : limit.minute;
}

function rateHeaders(limit, { retryAfter } = {}) {
  const bucket = bindingBucket(limit);
  const remaining = retryAfter === undefined ? Math.floor(bucket.tokens) : 0;
  const secondsToFull = Math.ceil(bucket.msUntil(bucket.capacity) / 1000);
  const reset = Math.ceil(Date.now() / 1000) + secondsToFull;
  // draft-ietf-httpapi-ratelimit-headers-11: t is the time until more quota is available,
  // for a token bucket the next whole token (and never later than Retry-After on a 429).
  const nextToken = Math.ceil(bucket.msUntil(Math.floor(bucket.tokens) + 1) / 1000);
  const t = retryAfter === undefined ? Math.max(1, nextToken) : retryAfter;
  const { minute, day } = limit;
  const headers = {
    'X-RateLimit-Limit': String(bucket.capacity),
    'X-RateLimit-Remaining': String(remaining),
    'X-RateLimit-Reset': String(reset),
    'RateLimit-Policy': `"minute";q=${minute.capacity};w=60, "day";q=${day.capacity};w=86400`,
    RateLimit: `"${bucket.name}";r=${remaining};t=${t}`,
  };
  if (retryAfter !== undefined) headers['Retry-After'] = String(retryAfter);
  return headers;
}

// ---------------------------------------------------------------------------------------------
// Errors and validation.

export const STATUS_OF = {
  invalid_request: 400,
  unauthorized: 401,
  not_found: 404,
  method_not_allowed: 405,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  temporarily_banned: 429,
  internal_error: 500,
};

export class HttpError extends Error {
  constructor(code, message, headers = {}) {
    super(message);
    this.code = code;
    this.status = STATUS_OF[code];
    this.headers = headers;
  }
}

export function errorBody(code, message) {
  return { code, message, status: STATUS_OF[code] };
}

/** `limit`: decimal integer 1..100, absent means 20; `0`, `1.5`, `1e1`, empty, twice: 400. */
export function parseLimit(value) {
  if (value === undefined) return LIMIT_DEFAULT;
  if (Array.isArray(value)) throw new HttpError('invalid_request', 'Query parameter limit must be given at most once.');
  if (!/^[0-9]{1,3}$/.test(value) || Number(value) < 1 || Number(value) > LIMIT_MAX) {
    throw new HttpError('invalid_request', `Query parameter limit must be an integer from 1 to ${LIMIT_MAX}.`);
  }
  return Number(value);
}

export function parseStatus(value) {
  if (value === undefined) return undefined;
  if (Array.isArray(value)) throw new HttpError('invalid_request', 'Query parameter status must be given at most once.');
  if (!PET_STATUSES.includes(value)) {
    throw new HttpError('invalid_request', `Query parameter status must be one of ${PET_STATUSES.join(', ')}.`);
  }
  return value;
}

/** `cursor`: the id after which the next page starts (from the `next` link). */
export function parseCursor(value) {
  if (value === undefined) return undefined;
  if (Array.isArray(value) || !/^[0-9]{1,16}$/.test(value) || !Number.isSafeInteger(Number(value))) {
    throw new HttpError('invalid_request', 'Query parameter cursor is not a valid cursor.');
  }
  return Number(value);
}

/** `petId`: a decimal int64; beyond the safe range it cannot exist, so it maps to a 404. */
export function parsePetId(value) {
  if (!/^-?[0-9]{1,20}$/.test(value)) {
    throw new HttpError('invalid_request', 'Path parameter petId must be a decimal integer.');
  }
  const big = BigInt(value);
  if (big > INT64_MAX || big < INT64_MIN) {
    throw new HttpError('invalid_request', 'Path parameter petId must be a 64-bit integer.');
  }
  const n = Number(value);
  return Number.isSafeInteger(n) ? n : undefined;
}

/** A NewPet from a parsed JSON body: only the known fields are copied into a fresh object. */
export function parseNewPet(body) {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new HttpError('invalid_request', 'The request body must be a JSON object.');
  }
  const problems = [];
  if (!Object.hasOwn(body, 'name')) problems.push('name is required');
  else if (typeof body.name !== 'string' || body.name.trim() === '' || body.name.length > NAME_MAX_LENGTH) {
    problems.push(`name must be a non-empty string of at most ${NAME_MAX_LENGTH} characters`);
  }
  if (!Object.hasOwn(body, 'categoryId')) problems.push('categoryId is required');
  else if (!Number.isSafeInteger(body.categoryId)) problems.push('categoryId must be an integer');
  if (Object.hasOwn(body, 'status') && !PET_STATUSES.includes(body.status)) {
    problems.push(`status must be one of ${PET_STATUSES.join(', ')}`);
  }
  if (problems.length > 0) throw new HttpError('invalid_request', `Invalid pet: ${problems.join('; ')}.`);
  const pet = { name: body.name, categoryId: body.categoryId };
  if (body.status !== undefined) pet.status = body.status;
  return pet;
}

/**
 * After a 413: read and throw away the rest of the upload (up to `cap` bytes) so that the
 * client, still sending, gets to read the response instead of a connection reset.
 * Resolves true when the whole request was read, false when the cap was hit (then close).
 */
export function discardBody(req, cap = 4 * 1024 * 1024) {
  return new Promise((resolve) => {
    if (req.readableEnded || req.complete) return resolve(true);
    let seen = 0;
    const onData = (chunk) => {
      seen += chunk.length;
      if (seen > cap) finish(false);
    };
    const finish = (whole) => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onEnd);
      if (!whole) req.pause();
      resolve(whole);
    };
    const onEnd = () => finish(true);
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onEnd);
    req.resume();
  });
}

/** Headers petstore puts on every response: a request id (also in its logs) and no caching. */
export function baseHeaders() {
  return { 'X-Request-Id': randomUUID(), 'Cache-Control': 'no-store' };
}

/**
 * The headers of the two ceiling peers' answers, precomputed once: the same set the real
 * servers send (request id, no-store, JSON, rate limits), with values that never change.
 */
export function fixedHeaders() {
  return {
    'X-Request-Id': '00000000-0000-4000-8000-000000000000',
    'Cache-Control': 'no-store',
    'Content-Type': 'application/json; charset=utf-8',
    'X-RateLimit-Limit': '1000000000',
    'X-RateLimit-Remaining': '999999999',
    'X-RateLimit-Reset': String(Math.ceil(Date.now() / 1000) + 1),
    'RateLimit-Policy': '"minute";q=1000000000;w=60, "day";q=1000000000000;w=86400',
    RateLimit: '"minute";r=999999999;t=1',
  };
}

/** Headers every response of GET /pets/{petId} carries. */
export function deprecationHeaders(base) {
  return {
    Deprecation: DEPRECATION,
    Sunset: SUNSET,
    Link: `<${base}/pets>; rel="successor-version"`,
  };
}

/** The `next` link of a full page, filters carried over. */
export function nextLink(base, { limit, status }, lastId) {
  const params = new URLSearchParams({ limit: String(limit) });
  if (status) params.set('status', status);
  params.set('cursor', String(lastId));
  return `<${base}/pets?${params}>; rel="next"`;
}

// ---------------------------------------------------------------------------------------------
// The store: petstore's own module, so every peer has the same durability (fdatasync, group
// commit) as petstore. It is built by `node build.mjs --tests` at the repository root.

export async function openStore(opts) {
  let mod;
  try {
    mod = await import('../../../build/src/store/index.js');
  } catch (err) {
    if (err.code !== 'ERR_MODULE_NOT_FOUND' || !String(err.message).includes('build/src/store/index.js')) throw err;
    console.error('bench peer: build/src/store/index.js is missing: run `node build.mjs --tests` at the repository root');
    process.exit(1);
  }
  const logger = { log() {} };
  return opts.memory ? mod.openMemoryStore({ logger }) : mod.openFileStore(opts.data, { logger });
}

// ---------------------------------------------------------------------------------------------
// Seed data, shared by the runner (which POSTs it) and the ceiling peer (which precomputes it).

export function seedPet(i) {
  return { name: `pet-${i}`, categoryId: (i % 7) + 1, status: PET_STATUSES[i % 3] };
}
