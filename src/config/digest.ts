// How an API key is looked up: by its SHA-256 digest, computed here for the config's keys and
// for every bearer token a request sends. One function, since the two must agree or every key
// fails.
import { hash } from 'node:crypto';

/** Hex SHA-256 of a key: how the key is looked up, and its id in the limiter. */
export function keyDigest(key: string): string {
  return hash('sha256', key, 'hex');
}
