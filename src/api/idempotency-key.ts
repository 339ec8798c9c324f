// The Idempotency-Key request header of POST /pets (draft-ietf-httpapi-idempotency-key-header):
// its value, its schema as the OpenAPI document shows it, and the answers a create with a key
// comes to.
import { ApiError, IDEMPOTENCY_KEY_MAX_LENGTH, isIdempotencyKey } from '../core/index.js';
import { newPetFingerprint, type CreateOutcome, type PetStore, type StoredPet } from '../store/index.js';
import type { Reply } from './contract.js';
import type { Schema } from './validate.js';

export const IDEMPOTENCY_HEADER = 'Idempotency-Key';

const INVALID = new ApiError(
  'invalid_request',
  `${IDEMPOTENCY_HEADER} must be 1 to ${IDEMPOTENCY_KEY_MAX_LENGTH} printable ASCII characters, sent bare (abc) or as a quoted string ("abc").`,
);
const REPEATED = new ApiError('invalid_request', `${IDEMPOTENCY_HEADER} must be given only once.`);
const IN_USE = new ApiError(
  'idempotency_key_in_use',
  `A request with this ${IDEMPOTENCY_HEADER} is still being processed; retry once it has been answered.`,
);
const REUSED = new ApiError(
  'idempotency_key_reused',
  `This ${IDEMPOTENCY_HEADER} was already used with another payload; send a new key for a new pet.`,
);
const UNSUPPORTED = new ApiError(
  'not_implemented',
  `This deployment's store does not support ${IDEMPOTENCY_HEADER} yet; nothing was added.`,
);

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * The key a header value names, or an ApiError. The draft makes the value a Structured Field
 * string (RFC 8941 section 3.3.3: `"abc"`, with `\"` and `\\` the only escapes); most clients
 * send it bare (`abc`, as Stripe's do). Both name the same key: the characters inside, 1..255
 * printable ASCII. A value that starts with a quote is read as a string, and must be one.
 */
export function parseIdempotencyKey(value: string): string | ApiError {
  if (value.charCodeAt(0) !== QUOTE) return isIdempotencyKey(value) ? value : INVALID;
  let key = '';
  for (let i = 1; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c === QUOTE) return i === value.length - 1 && isIdempotencyKey(key) ? key : INVALID;
    if (c === BACKSLASH) {
      const next = value.charCodeAt(++i);
      if (next !== QUOTE && next !== BACKSLASH) return INVALID;
      key += value[i];
    } else if (c < 0x20 || c > 0x7e) {
      return INVALID;
    } else {
      key += value[i];
    }
  }
  return INVALID; // no closing quote
}

/** The key of a request's Idempotency-Key field lines (one or more), or the 400 it gets. */
export function idempotencyKeyOf(values: readonly string[]): string | ApiError {
  if (values.length > 1) return REPEATED;
  return parseIdempotencyKey(values[0] ?? '');
}

function created(base: string, stored: StoredPet): Reply {
  return { status: 201, body: stored.json, headers: { location: `${base}/pets/${stored.pet.id}` } };
}

/** A replay says so (Idempotent-Replayed: true), so a harness can tell it from a first answer. */
function replayed(base: string, stored: StoredPet): Reply {
  return { status: 201, body: stored.json, headers: { location: `${base}/pets/${stored.pet.id}`, 'idempotent-replayed': 'true' } };
}

/** POST /pets with a key: the first create, its replay, or the 409/422 of the draft. */
export async function createOnce(
  store: PetStore, pet: Parameters<PetStore['create']>[0], key: string, scope: string, base: string,
): Promise<Reply | ApiError> {
  if (store.createIdempotent === undefined) return UNSUPPORTED;
  const outcome: CreateOutcome = await store.createIdempotent(pet, { scope, key, fingerprint: newPetFingerprint(pet) });
  switch (outcome.kind) {
    case 'created':
      return created(base, outcome.stored);
    case 'replayed':
      // The pet as created: the same body, and the same Location for the same base URL.
      return replayed(base, outcome.stored);
    case 'mismatch':
      return REUSED;
    case 'in_flight':
      return IN_USE;
  }
}

export const idempotencyKeySchema = {
  type: 'string',
  minLength: 1,
  maxLength: IDEMPOTENCY_KEY_MAX_LENGTH + 2,
  pattern: '^[\\x20-\\x7E]+$',
  description: 'A key of 1..255 printable ASCII characters, bare or as a Structured Field string (quoted).',
  examples: ['"8e03978e-40d5-43e8-bc93-6894a57f9324"'],
} as const satisfies Schema;

export const IDEMPOTENCY_KEY_DESCRIPTION =
  'Makes the create safe to retry (draft-ietf-httpapi-idempotency-key-header): 1..255 printable ASCII characters, ' +
  'as a Structured Field string (`"abc"`) or bare (`abc`), the same key either way. Scoped to the API key that sends it. ' +
  'Expiry policy: a key is remembered for 24 hours from the create that first used it (unless the deployment sets ' +
  '`idempotencyRetentionHours`), then forgotten: a request with it then creates a new pet. While it is remembered, the same key with the same ' +
  'payload (the validated NewPet) gets the original 201, the same body and Location, even after a restart; another payload ' +
  'gets 422 `idempotency_key_reused`; a repeat while the first is still being written gets 409 `idempotency_key_in_use` ' +
  '(with pets in a database shared by several processes, a repeat through another process waits for the first and gets its 201). ' +
  'Only a 201 is remembered: a request that failed (400, 413, 503, ...) stored nothing and its retry is processed anew.';
