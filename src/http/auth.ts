// Bearer authentication (RFC 6750). Keys are looked up by their SHA-256 digest, so the
// comparison never runs over the secret itself: hashing both sides to a fixed length first
// makes the lookup time independent of how much of a wrong key matches.
import { keyDigest, type KeyEntry } from '../config/index.js';
import { ApiError } from '../core/index.js';

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
  if (header === undefined || header === '') return MISSING;
  const space = header.indexOf(' ');
  // The scheme name is case-insensitive (RFC 9110 section 11.1).
  if (space !== 6 || header.slice(0, 6).toLowerCase() !== 'bearer') return isBearerAlone(header) ? INVALID : OTHER_SCHEME;
  const token = header.slice(7).trim();
  if (token === '') return INVALID;
  // Only digests are compared (by the Map): the time taken says nothing about how much of
  // a wrong key matches a real one.
  const entry = keys.get(keyDigest(token));
  return entry === undefined ? INVALID : { kind: 'key', entry };
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
