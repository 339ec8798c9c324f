// Bearer authentication (RFC 6750). Keys are looked up by their SHA-256 digest, so the
// comparison never runs over the secret itself: hashing both sides to a fixed length first
// makes the lookup time independent of how much of a wrong key matches.
import type { Socket } from 'node:net';
import { keyDigest, type KeyEntry } from '../config/index.js';
import { ApiError } from '../core/index.js';
import { connectionOf } from './connection/index.js';

export type AuthResult =
  | { readonly kind: 'key'; readonly entry: KeyEntry }
  | { readonly kind: 'missing' }
  /** Another scheme (Basic, ...): RFC 6750 section 3 gives it the challenge without an error code. */
  | { readonly kind: 'other_scheme' }
  | { readonly kind: 'invalid' };

const MISSING: AuthResult = { kind: 'missing' };
const INVALID: AuthResult = { kind: 'invalid' };
const OTHER_SCHEME: AuthResult = { kind: 'other_scheme' };

export function authenticate(header: string | undefined, keys: ReadonlyMap<string, KeyEntry>): AuthResult {
  const digest = bearerDigest(header);
  return typeof digest === 'string' ? lookUp(digest, keys) : digest;
}

/** A key found by its digest, or INVALID. */
function lookUp(digest: string, keys: ReadonlyMap<string, KeyEntry>): AuthResult {
  // Only digests are compared (by the Map): the time taken says nothing about how much of
  // a wrong key matches a real one.
  const entry = keys.get(digest);
  return entry === undefined ? INVALID : { kind: 'key', entry };
}

/** The SHA-256 digest of the bearer token an Authorization value carries, or why there is none. */
function bearerDigest(header: string | undefined): string | AuthResult {
  if (header === undefined || header === '') return MISSING;
  const space = header.indexOf(' ');
  // The scheme name is case-insensitive (RFC 9110 section 11.1).
  if (space !== 6 || header.slice(0, 6).toLowerCase() !== 'bearer') return isBearerAlone(header) ? INVALID : OTHER_SCHEME;
  const token = header.slice(7).trim();
  if (token === '') return INVALID;
  return keyDigest(token);
}

/**
 * What one connection's last Authorization value resolved to, under one config generation.
 * A keep-alive client sends the same value on every request: the SHA-256 of its key is
 * computed once per connection instead of once per request.
 */
interface Remembered {
  generation: number;
  header: string | undefined;
  /** The token's digest (compared with the admin key's), or why there is none. */
  digest: string | AuthResult;
  /** What it resolved to against the config's keys. */
  result: AuthResult;
}


/**
 * authenticate(), remembered per connection. A hit needs the very same header value on the
 * same connection under the same config generation (which moves on every reload: a revoked
 * key fails on its next request, on every connection). A wrong key is remembered exactly as
 * a right one, so the two still cost the same; nothing is shared between connections, so a
 * client learns nothing from another's keys. Returns the digest too, for the admin key.
 */
export function authenticateOn(
  socket: Socket, header: string | undefined, generation: number, keys: ReadonlyMap<string, KeyEntry>,
): Remembered {
  const conn = connectionOf(socket);
  const last = conn.auth as Remembered | undefined;
  if (last !== undefined && last.header === header && last.generation === generation) return last;
  const digest = bearerDigest(header);
  const result = typeof digest === 'string' ? lookUp(digest, keys) : digest;
  if (last === undefined) {
    const fresh: Remembered = { generation, header, digest, result };
    conn.auth = fresh;
    return fresh;
  }
  last.generation = generation;
  last.header = header;
  last.digest = digest;
  last.result = result;
  return last;
}

/** The admin key's check: the bearer token's digest against the config's admin digest. */
export function isAdminKey(remembered: Remembered, adminDigest: string): AuthResult | undefined {
  const digest = remembered.digest;
  if (typeof digest !== 'string') return digest;
  return digest === adminDigest ? undefined : INVALID;
}

/** "Bearer" with no token at all: the bearer scheme, with a key that is not valid. */
function isBearerAlone(header: string): boolean {
  return header.length === 6 && header.toLowerCase() === 'bearer';
}

/**
 * The WWW-Authenticate challenge of a 401 (RFC 6750 section 3): error="invalid_token" only
 * when a bearer token was sent; a request without one, or with another scheme, "lacks any
 * authentication information" for this scheme and gets no error code.
 */
export function challenge(result: AuthResult): string {
  return result.kind === 'invalid'
    ? 'Bearer realm="petstore", error="invalid_token", error_description="The API key is not valid."'
    : 'Bearer realm="petstore"';
}

// The 401 answers never vary: built once (they are the answer to every key-guessing flood).
const MISSING_KEY = new ApiError('unauthorized', 'An API key is required: send "Authorization: Bearer <key>".');
const INVALID_KEY = new ApiError('unauthorized', 'The API key is not valid.');
const OTHER_SCHEME_KEY = new ApiError('unauthorized', 'Only API keys are accepted: send "Authorization: Bearer <key>".');

/**
 * The Error of a 401, the same on every path: /__admin answers a request without its key
 * with these too, so that a 401 does not tell an outsider that admin is enabled.
 */
export function unauthorized(result: AuthResult): ApiError {
  return result.kind === 'missing' ? MISSING_KEY : result.kind === 'invalid' ? INVALID_KEY : OTHER_SCHEME_KEY;
}
