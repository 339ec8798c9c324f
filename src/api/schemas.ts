// The API's data shapes, as schemas (data) and as parsers that turn untrusted input into
// typed values. The OpenAPI document is generated from these same objects.
import { ApiError, ERROR_CODES, PET_STATUSES, clip, type ErrorCode, type NewPet, type PetStatus } from '../core/index.js';
import type { Query } from './contract.js';
import { check, formatProblems, type Problem, type Schema } from './validate.js';

export const NAME_MAX_LENGTH = 256;
export const LIMIT_DEFAULT = 20;
export const LIMIT_MAX = 100;
const INT64_MAX = 9223372036854775807n;
const INT64_MIN = -9223372036854775808n;

export const petStatusSchema = {
  type: 'string',
  enum: PET_STATUSES,
  description: 'Availability of the animal.',
  examples: ['available'],
} as const satisfies Schema;

export const newPetSchema = {
  type: 'object',
  description: 'An animal to add. Any `id` sent is ignored: the service assigns it.',
  required: ['name', 'categoryId'],
  properties: {
    name: { type: 'string', minLength: 1, maxLength: NAME_MAX_LENGTH, description: "The animal's name: not blank, no control characters (U+0000-U+001F, U+007F), no lone surrogates.", examples: ['Rex'] },
    categoryId: { type: 'integer', format: 'int64', description: 'Identifier of the category the animal belongs to.', examples: [3] },
    status: petStatusSchema,
  },
} as const satisfies Schema;

export const petSchema = {
  type: 'object',
  description: 'An animal, with the identifier the service assigned.',
  required: ['id', 'name', 'categoryId'],
  properties: {
    id: { type: 'integer', format: 'int64', minimum: 1, description: 'Assigned by the service on creation.', examples: [42] },
    ...newPetSchema.properties,
  },
} as const satisfies Schema;

export const errorSchema = {
  type: 'object',
  required: ['code', 'message', 'status'],
  properties: {
    // The enum is the registry itself, so a generated client can switch on every code.
    code: { type: 'string', enum: Object.keys(ERROR_CODES) as ErrorCode[], description: 'Machine-readable error code: stable, one of the listed values.', examples: ['invalid_request'] },
    message: { type: 'string', description: 'Human-readable description naming the offending field.', examples: ['Invalid pet: name is required.'] },
    status: { type: 'integer', description: 'The HTTP status code, repeated.', examples: [400] },
  },
} as const satisfies Schema;

export const limitSchema = {
  type: 'integer',
  minimum: 1,
  maximum: LIMIT_MAX,
  default: LIMIT_DEFAULT,
  description: 'Maximum number of animals returned.',
  examples: [LIMIT_DEFAULT],
} as const satisfies Schema;

export const cursorSchema = {
  type: 'string',
  pattern: '^[0-9]{1,16}$',
  description: 'Opaque position from the `next` link of the previous page.',
  examples: ['42'],
} as const satisfies Schema;

export const petIdSchema = {
  type: 'integer',
  format: 'int64',
  description: 'Identifier of the animal to retrieve.',
  examples: [42],
} as const satisfies Schema;

// C0 controls and DEL: they break logs, terminals and CSV exports downstream, and no name needs them.
const CONTROL_CHARACTER = /[\u0000-\u001F\u007F]/;
// In a u-mode pattern a well-formed pair is one code point, so only lone surrogates are Cs.
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * What is wrong with a stored text, or undefined. JSON escapes let a client send a lone
 * surrogate ("\ud800"), which is not Unicode: echoed back, strict UTF-8 decoders and JSON
 * parsers of other languages reject the whole response.
 */
function textProblem(text: string): string | undefined {
  if (CONTROL_CHARACTER.test(text)) return 'must not contain control characters (U+0000-U+001F, U+007F)';
  if (LONE_SURROGATE.test(text)) return 'must be valid Unicode (it has a lone surrogate)';
  return undefined;
}

/** A NewPet from a parsed JSON body; copies only the known fields into a fresh object. */
export function parseNewPet(body: unknown): NewPet {
  const problems = check(newPetSchema, body);
  // The rules of a name the schema does not say (blank, control characters, lone surrogates)
  // join the others, so that the message names every problem of the body at once.
  const name = nameProblem(body);
  if (name !== undefined) problems.push(name);
  if (problems.length > 0) throw new ApiError('invalid_request', `Invalid pet: ${formatProblems(problems)}.`);
  const record = body as { name: string; categoryId: number; status?: PetStatus };
  const pet: NewPet = { name: record.name, categoryId: record.categoryId };
  if (record.status !== undefined) pet.status = record.status;
  return pet;
}

/** A name of whitespace only (an empty one is the schema's minLength problem), or with text no name needs. */
function nameProblem(body: unknown): Problem | undefined {
  if (typeof body !== 'object' || body === null || !Object.hasOwn(body, 'name')) return undefined;
  const name = (body as { name: unknown }).name;
  if (typeof name !== 'string' || name === '') return undefined;
  if (name.trim() === '') return { path: 'name', message: 'must not be blank' };
  const text = textProblem(name);
  return text === undefined ? undefined : { path: 'name', message: text };
}

// The parameter parsers below return their ApiError instead of throwing it. A 400 is an
// everyday answer on these paths, and throwing is the costly way to give it: unwinding
// through the frames costs more than the rest of the request's own work, and V8 never
// optimizes a function that keeps exiting by throw (it counts calls at returns).

/** The query of GET /pets, or the first problem with it. */
export interface ListQuery {
  readonly limit: number;
  readonly status: PetStatus | undefined;
  readonly afterId: number | undefined;
}

export function parseListQuery(query: Query): ListQuery | ApiError {
  const rawLimit = single(query, 'limit');
  if (rawLimit instanceof ApiError) return rawLimit;
  const limit = parseLimit(rawLimit);
  if (limit instanceof ApiError) return limit;
  const rawStatus = single(query, 'status');
  if (rawStatus instanceof ApiError) return rawStatus;
  const status = parseStatus(rawStatus);
  if (status instanceof ApiError) return status;
  const rawCursor = single(query, 'cursor');
  if (rawCursor instanceof ApiError) return rawCursor;
  const afterId = parseCursor(rawCursor);
  if (afterId instanceof ApiError) return afterId;
  return { limit, status, afterId };
}

/** The `limit` query parameter: a plain decimal integer 1..100. */
export function parseLimit(raw: string | undefined): number | ApiError {
  if (raw === undefined) return LIMIT_DEFAULT;
  // Leading zeros are allowed ("0020" is 20), as docs/api.md says; at most three digits after them.
  if (!/^0*[0-9]{1,3}$/.test(raw)) {
    return new ApiError('invalid_request', `Query parameter limit must be an integer from 1 to ${LIMIT_MAX}, got "${clip(raw, 40)}".`);
  }
  const n = Number(raw);
  if (n < 1 || n > LIMIT_MAX) {
    return new ApiError('invalid_request', `Query parameter limit must be an integer from 1 to ${LIMIT_MAX}, got ${n}.`);
  }
  return n;
}

/** The `status` query parameter: exactly one of the PetStatus values. */
export function parseStatus(raw: string | undefined): PetStatus | undefined | ApiError {
  if (raw === undefined) return undefined;
  if (!(PET_STATUSES as readonly string[]).includes(raw)) {
    return new ApiError('invalid_request', `Query parameter status must be one of ${PET_STATUSES.join(', ')}, got "${clip(raw, 40)}".`);
  }
  return raw as PetStatus;
}

/** The `cursor` query parameter: the id after which the page starts. */
export function parseCursor(raw: string | undefined): number | undefined | ApiError {
  if (raw === undefined) return undefined;
  if (!/^[0-9]{1,16}$/.test(raw) || !Number.isSafeInteger(Number(raw))) {
    return new ApiError('invalid_request', `Query parameter cursor is not a valid cursor: "${clip(raw, 40)}".`);
  }
  return Number(raw);
}

/**
 * The id a petId of 1 to 15 ASCII digits names (how ids are sent), read without a regular
 * expression; -1 for any other form, which parsePetId() then reads or refuses.
 */
export function plainPetId(raw: string): number {
  const n = raw.length;
  if (n === 0 || n > 15) return -1;
  let id = 0;
  for (let i = 0; i < n; i++) {
    const digit = raw.charCodeAt(i) - 48;
    if (digit < 0 || digit > 9) return -1;
    id = id * 10 + digit;
  }
  return id;
}

/**
 * The petId path segment. Not a decimal integer, or outside int64: 400. Well-formed: the
 * number (ids beyond the safe range cannot exist, so they map to a 404 via Infinity).
 */
export function parsePetId(raw: string): number | ApiError {
  if (!/^-?[0-9]{1,20}$/.test(raw)) {
    return new ApiError('invalid_request', `Path parameter petId must be a decimal integer, got "${clip(raw, 40)}".`);
  }
  // Up to 15 digits is always a safe integer; only longer ids need the exact int64 check.
  if (raw.length <= 15) return Number(raw);
  const big = BigInt(raw);
  if (big > INT64_MAX || big < INT64_MIN) {
    return new ApiError('invalid_request', `Path parameter petId must be a 64-bit integer, got "${clip(raw, 40)}".`);
  }
  const n = Number(raw);
  return Number.isSafeInteger(n) ? n : Number.POSITIVE_INFINITY;
}

/** The one value of `name`, or undefined; given twice is an error (returned, see parseListQuery). */
export function single(query: Query, name: string): string | undefined | ApiError {
  const values = query.get(name);
  if (values === undefined) return undefined;
  if (values.length > 1) return new ApiError('invalid_request', `Query parameter ${name} must be given at most once.`);
  return values[0];
}
