// The Idempotency-Key rule (draft-ietf-httpapi-idempotency-key-header), shared by the HTTP
// parsing of the header and the store's check of what it reads back from disk.

/** Longest key accepted, in characters. */
export const IDEMPOTENCY_KEY_MAX_LENGTH = 255;

/** 1..255 printable ASCII characters (U+0020..U+007E), the key as the client meant it. */
export function isIdempotencyKey(key: string): boolean {
  const n = key.length;
  if (n < 1 || n > IDEMPOTENCY_KEY_MAX_LENGTH) return false;
  for (let i = 0; i < n; i++) {
    const c = key.charCodeAt(i);
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}
