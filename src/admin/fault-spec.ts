// What a fault is, as POST /__admin/faults gives it: its fields, their bounds and their
// validation, the seeded generator behind probabilities and delay ranges, and the Error answer
// of a status fault. The faults as armed are in faults.ts.
import { ApiError } from '../core/index.js';

/** What a connection fault does instead of a whole answer. */
export const CONNECTION_FAULTS = ['reset', 'empty', 'truncated'] as const;
export type ConnectionFault = (typeof CONNECTION_FAULTS)[number];

export interface DelayRange {
  readonly min: number;
  readonly max: number;
}

/** A validated POST /__admin/faults body. */
export interface FaultSpec {
  /** An operationId, or "*" for every /v1 operation. */
  readonly operation: string;
  /** Answer this instead (nothing is done); undefined when the fault does not answer. */
  readonly status: 429 | 503 | undefined;
  /** Break the connection after handling the request; undefined when it does not. */
  readonly kind: ConnectionFault | undefined;
  /** Wait first: a fixed time (min = max) or a uniform range; undefined for no wait. */
  readonly delay: DelayRange | undefined;
  /** Retry-After of a status answer, in seconds. */
  readonly retryAfter: number;
  /** Requests to catch, one after another (when probability is undefined). */
  readonly count: number | undefined;
  /** Chance that each matching request is caught, 0 < p <= 1, until cleared. */
  readonly probability: number | undefined;
  /** Seed of the generator behind probability and delay ranges; drawn at random when absent. */
  readonly seed: number | undefined;
}

export const MAX_FAULT_DELAY_MS = 30_000;
export const MAX_FAULT_COUNT = 1_000_000;
const MAX_RETRY_AFTER = 3600;
/** Seeds are 32-bit. */
export const MAX_SEED = 0xffff_ffff;
const FIELDS = new Set(['operation', 'status', 'kind', 'delayMs', 'count', 'probability', 'seed', 'retryAfter']);
/** Every /v1 operation. */
export const ANY_OPERATION = '*';

/**
 * mulberry32: a small, fast 32-bit generator, plenty for spreading faults (not for secrets).
 * The same seed gives the same sequence on every run and every platform.
 */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The answer of a request a status fault catches: the Error body a real 429 or 503 would have. */
export function faultError(fault: { readonly status: 429 | 503 | undefined; readonly retryAfter: number }): ApiError {
  const retryAfter = String(fault.retryAfter);
  return fault.status === 429
    ? new ApiError('rate_limited', `Rate limit exceeded; retry after ${retryAfter} s. (fault injected through /__admin/faults)`, { 'Retry-After': retryAfter, 'X-RateLimit-Remaining': '0' })
    : new ApiError('service_unavailable', `The service is unavailable; nothing was changed. Retry after ${retryAfter} s. (fault injected through /__admin/faults)`, { 'Retry-After': retryAfter });
}

/** Validates a POST /__admin/faults body; every problem named at once. */
export function parseFault(body: unknown, operations: readonly string[]): FaultSpec | ApiError {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return new ApiError('invalid_request', 'The body must be a JSON object {"operation", and "status", "kind" or "delayMs"}.');
  }
  const raw = body as Record<string, unknown>;
  const problems: string[] = [];
  for (const k of Object.keys(raw)) if (!FIELDS.has(k)) problems.push(`${JSON.stringify(k)} is not a known field`);
  const operation = raw.operation;
  if (typeof operation !== 'string' || !(operation === ANY_OPERATION || operations.includes(operation))) {
    problems.push(`operation must be one of ${operations.join(', ')} or "*" (every operation)`);
  }
  const has = (k: string): boolean => raw[k] !== undefined;
  if (!has('status') && !has('kind') && !has('delayMs')) problems.push('give status (429 or 503), kind (reset, empty or truncated) or delayMs');
  if (has('status') && has('kind')) problems.push('give status or kind, not both');
  if (has('status') && raw.status !== 429 && raw.status !== 503) problems.push('status must be 429 or 503');
  if (has('kind') && !(CONNECTION_FAULTS as readonly unknown[]).includes(raw.kind)) problems.push(`kind must be one of ${CONNECTION_FAULTS.join(', ')}`);
  const delay = has('delayMs') ? parseDelay(raw.delayMs, problems) : undefined;
  if (has('count') && has('probability')) problems.push('give count or probability, not both');
  const count = raw.count ?? (has('probability') ? undefined : 1);
  if (count !== undefined && !isIntIn(count, 1, MAX_FAULT_COUNT)) problems.push(`count must be an integer from 1 to ${MAX_FAULT_COUNT}`);
  const probability = raw.probability;
  if (has('probability') && !(typeof probability === 'number' && probability > 0 && probability <= 1)) {
    problems.push('probability must be a number above 0 and at most 1');
  }
  if (has('seed') && !has('probability') && !(delay !== undefined && delay.min !== delay.max)) {
    problems.push('seed goes with probability or a delayMs range');
  }
  if (has('seed') && !isIntIn(raw.seed, 0, MAX_SEED)) problems.push(`seed must be an integer from 0 to ${MAX_SEED}`);
  if (has('retryAfter') && !has('status')) problems.push('retryAfter goes with status');
  const retryAfter = raw.retryAfter ?? 1;
  if (!isIntIn(retryAfter, 0, MAX_RETRY_AFTER)) problems.push(`retryAfter must be an integer from 0 to ${MAX_RETRY_AFTER} (seconds)`);
  if (problems.length > 0) return new ApiError('invalid_request', `Invalid fault: ${problems.join('; ')}.`);
  return {
    operation: operation as string,
    status: raw.status as 429 | 503 | undefined,
    kind: raw.kind as ConnectionFault | undefined,
    delay,
    retryAfter: retryAfter as number,
    count: count as number | undefined,
    probability: probability as number | undefined,
    seed: raw.seed as number | undefined,
  };
}

function parseDelay(value: unknown, problems: string[]): DelayRange | undefined {
  const bound = `an integer from 0 to ${MAX_FAULT_DELAY_MS}`;
  if (typeof value === 'number') {
    if (isIntIn(value, 0, MAX_FAULT_DELAY_MS)) return { min: value, max: value };
    problems.push(`delayMs must be ${bound} or {"min", "max"}`);
    return undefined;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    problems.push(`delayMs must be ${bound} or {"min", "max"}`);
    return undefined;
  }
  const range = value as Record<string, unknown>;
  const before = problems.length;
  for (const k of Object.keys(range)) if (k !== 'min' && k !== 'max') problems.push(`delayMs.${k} is not a known field (min, max)`);
  if (!isIntIn(range.min, 0, MAX_FAULT_DELAY_MS)) problems.push(`delayMs.min must be ${bound}`);
  if (!isIntIn(range.max, 0, MAX_FAULT_DELAY_MS)) problems.push(`delayMs.max must be ${bound}`);
  if (problems.length > before) return undefined;
  if ((range.min as number) > (range.max as number)) {
    problems.push('delayMs.min must not be above delayMs.max');
    return undefined;
  }
  return { min: range.min as number, max: range.max as number };
}

function isIntIn(v: unknown, min: number, max: number): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max;
}
