// Bearer authentication (RFC 6750). Keys are looked up by their SHA-256 digest, so the
// comparison never runs over the secret itself: hashing both sides to a fixed length first
// makes the lookup time independent of how much of a wrong key matches.
import { hash } from 'node:crypto';
import type { KeyEntry } from './config.js';

export type AuthResult =
  | { readonly kind: 'key'; readonly entry: KeyEntry }
  | { readonly kind: 'missing' }
  | { readonly kind: 'invalid' };

const MISSING: AuthResult = { kind: 'missing' };
const INVALID: AuthResult = { kind: 'invalid' };

export function authenticate(header: string | undefined, keys: ReadonlyMap<string, KeyEntry>): AuthResult {
  if (header === undefined || header === '') return MISSING;
  const space = header.indexOf(' ');
  // The scheme name is case-insensitive (RFC 9110 section 11.1).
  if (space !== 6 || header.slice(0, 6).toLowerCase() !== 'bearer') return INVALID;
  const token = header.slice(7).trim();
  if (token === '') return INVALID;
  // Only digests are compared (by the Map): the time taken says nothing about how much of
  // a wrong key matches a real one.
  const entry = keys.get(hash('sha256', token, 'hex'));
  return entry === undefined ? INVALID : { kind: 'key', entry };
}

/** The WWW-Authenticate challenge of a 401 (RFC 6750 section 3). */
export function challenge(result: AuthResult): string {
  return result.kind === 'invalid'
    ? 'Bearer realm="petstore", error="invalid_token", error_description="The API key is not valid."'
    : 'Bearer realm="petstore"';
}
