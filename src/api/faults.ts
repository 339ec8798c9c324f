// Injected faults, for harnesses that test their own client's retries: the next `count`
// requests of one operation answer 429 or 503 (Error body, Retry-After), or wait first. Set
// and cleared through POST/DELETE /__admin/faults; a reset clears them too.
import { ApiError } from '../core/index.js';

export interface FaultSpec {
  readonly operation: string;
  /** Answer this instead (nothing is done), or undefined to wait delayMs and then go on. */
  readonly status: 429 | 503 | undefined;
  readonly delayMs: number | undefined;
  /** Retry-After of a faulted answer, in seconds. */
  readonly retryAfter: number;
  readonly count: number;
}

export interface Fault extends FaultSpec {
  /** Requests still to fault. */
  remaining: number;
}

export const MAX_FAULT_DELAY_MS = 30_000;
export const MAX_FAULT_COUNT = 1_000_000;
const MAX_RETRY_AFTER = 3600;
const FIELDS = new Set(['operation', 'status', 'delayMs', 'count', 'retryAfter']);

/** The faults of one service instance, by operation (a new one replaces the one before). */
export class Faults {
  readonly #byOperation = new Map<string, Fault>();
  /**
   * Operations with a fault armed: the request pipeline checks this one field and looks no
   * further while it is 0, so faults cost nothing when none is set.
   */
  armed = 0;
  /** The waits of delayMs faults under way, each its own end: stop() ends them at once. */
  readonly #waits = new Set<() => void>();
  #stopped = false;

  set(spec: FaultSpec): void {
    this.#byOperation.set(spec.operation, { ...spec, remaining: spec.count });
    this.armed = this.#byOperation.size;
  }

  clear(): void {
    this.#byOperation.clear();
    this.armed = 0;
  }

  /** The fault for this request of `operation`, counted as used; undefined when none. */
  take(operation: string): Fault | undefined {
    const fault = this.#byOperation.get(operation);
    if (fault === undefined) return undefined;
    if (--fault.remaining <= 0) {
      this.#byOperation.delete(operation);
      this.armed = this.#byOperation.size;
    }
    return fault;
  }

  /**
   * The wait of a delayMs fault: resolves after `ms`, or at once once the service is stopping
   * (stop()), so that an injected delay never holds a stop past its grace period.
   */
  wait(ms: number): Promise<void> {
    if (this.#stopped || ms <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const end = (): void => {
        clearTimeout(timer);
        this.#waits.delete(end);
        resolve();
      };
      const timer = setTimeout(end, ms);
      this.#waits.add(end);
    });
  }

  /** The service is stopping: waits under way end now (their requests are served), and later ones do not wait. */
  stop(): void {
    this.#stopped = true;
    for (const end of [...this.#waits]) end();
  }

  list(): Array<{ operation: string; status?: number; delayMs?: number; retryAfter?: number; remaining: number }> {
    return [...this.#byOperation.values()].map((f) => ({
      operation: f.operation,
      ...(f.status === undefined ? { delayMs: f.delayMs } : { status: f.status, retryAfter: f.retryAfter }),
      remaining: f.remaining,
    }));
  }
}

/** The answer of a request a status fault catches: the Error body a real 429 or 503 would have. */
export function faultError(fault: Fault): ApiError {
  const retryAfter = String(fault.retryAfter);
  return fault.status === 429
    ? new ApiError('rate_limited', `Rate limit exceeded; retry after ${retryAfter} s. (fault injected through /__admin/faults)`, { 'Retry-After': retryAfter, 'X-RateLimit-Remaining': '0' })
    : new ApiError('service_unavailable', `The service is unavailable; nothing was changed. Retry after ${retryAfter} s. (fault injected through /__admin/faults)`, { 'Retry-After': retryAfter });
}

/** Validates a POST /__admin/faults body; every problem named at once. */
export function parseFault(body: unknown, operations: readonly string[]): FaultSpec | ApiError {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return new ApiError('invalid_request', 'The body must be a JSON object {"operation", "status" or "delayMs", "count"}.');
  }
  const raw = body as Record<string, unknown>;
  const problems: string[] = [];
  for (const k of Object.keys(raw)) if (!FIELDS.has(k)) problems.push(`${JSON.stringify(k)} is not a known field`);
  const operation = raw.operation;
  if (typeof operation !== 'string' || !operations.includes(operation)) {
    problems.push(`operation must be one of ${operations.join(', ')}`);
  }
  const hasStatus = raw.status !== undefined;
  const hasDelay = raw.delayMs !== undefined;
  if (hasStatus === hasDelay) problems.push('give exactly one of status (429 or 503) or delayMs');
  if (hasStatus && raw.status !== 429 && raw.status !== 503) problems.push('status must be 429 or 503');
  if (hasDelay && !isIntIn(raw.delayMs, 0, MAX_FAULT_DELAY_MS)) problems.push(`delayMs must be an integer from 0 to ${MAX_FAULT_DELAY_MS}`);
  const count = raw.count ?? 1;
  if (!isIntIn(count, 1, MAX_FAULT_COUNT)) problems.push(`count must be an integer from 1 to ${MAX_FAULT_COUNT}`);
  const retryAfter = raw.retryAfter ?? 1;
  if (!isIntIn(retryAfter, 0, MAX_RETRY_AFTER)) problems.push(`retryAfter must be an integer from 0 to ${MAX_RETRY_AFTER} (seconds)`);
  if (problems.length > 0) return new ApiError('invalid_request', `Invalid fault: ${problems.join('; ')}.`);
  return {
    operation: operation as string,
    status: hasStatus ? (raw.status as 429 | 503) : undefined,
    delayMs: hasDelay ? (raw.delayMs as number) : undefined,
    retryAfter: retryAfter as number,
    count: count as number,
  };
}

function isIntIn(v: unknown, min: number, max: number): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max;
}
