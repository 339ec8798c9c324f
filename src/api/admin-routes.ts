// The admin operations for test harnesses in any language (docs/operating.md, "Admin endpoints"): reset,
// seed and faults, under /__admin, opened only by the config's admin key. They are not part
// of the /v1 API: not in its route table, nor in its OpenAPI document.
import { ApiError, type NewPet } from '../core/index.js';
import type { SeedPet, StoredPet } from '../store/index.js';
import type { Reply } from './contract.js';
import { Faults, parseFault } from './faults.js';
import { parseNewPet } from './schemas.js';

/** What the admin operations act on: the service instance (store, limiters, faults). */
export interface AdminControl {
  /** Empty store (ids from 1), limits and bans cleared, faults cleared. */
  reset(): Promise<void>;
  /** One durable batch: all or nothing. */
  seed(pets: readonly SeedPet[]): Promise<StoredPet[]>;
  readonly faults: Faults;
  /** With several workers: resolves once every worker has the last change of `faults`. */
  readonly faultsShared?: () => Promise<void>;
}

/** What an admin handler is given: plain data, no HTTP objects. */
export interface AdminContext {
  /** The parsed JSON body, on routes that declare `body`; else undefined. */
  readonly body: unknown;
  /** Path parameters by name, for paths with `{name}` segments. */
  readonly params: Readonly<Record<string, string>>;
  /** The monotonic clock's reading for this request (ms). */
  readonly now: number;
  readonly control: AdminControl;
  /** The operationIds a fault may name. */
  readonly operations: readonly string[];
}

/**
 * One admin operation: adding one is one more entry in ADMIN_ROUTES. The HTTP layer opens
 * it with the admin key (or answers the 401 of any path), reads the body only when `body` is
 * set (up to ADMIN_MAX_BODY_BYTES), and sends the Reply; a Reply with `end` ends the
 * connection that way instead (see ConnectionEnd).
 */
export interface AdminRoute {
  readonly operationId: string;
  readonly method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** Relative to /__admin. */
  readonly path: string;
  /** True when the operation takes a JSON body. */
  readonly body?: boolean;
  readonly handler: (ctx: AdminContext) => Reply | ApiError | Promise<Reply | ApiError>;
}

/** Admin bodies may hold a seed of many pets: up to this, within maxPendingBodyBytes. */
export const ADMIN_MAX_BODY_BYTES = 8 * 1024 * 1024;

const NO_CONTENT: Reply = { status: 204, body: undefined };

/**
 * A seed body: a JSON array of NewPet, each optionally with an id (as --seed). Checked as one
 * batch: the first bad element is named and nothing is stored.
 */
export function parseSeedPets(body: unknown): SeedPet[] | ApiError {
  if (!Array.isArray(body)) return new ApiError('invalid_request', 'The body must be a JSON array of pets.');
  const pets: SeedPet[] = [];
  for (let i = 0; i < body.length; i++) {
    const item: unknown = body[i];
    let pet: NewPet & { id?: number };
    try {
      pet = parseNewPet(item);
    } catch (err) {
      return new ApiError('invalid_request', `pets[${i}]: ${(err as Error).message}`);
    }
    const id = (item as { id?: unknown }).id;
    if (id !== undefined) {
      if (typeof id !== 'number' || !Number.isSafeInteger(id) || id < 1) {
        return new ApiError('invalid_request', `pets[${i}]: id must be a positive integer within the safe range.`);
      }
      pet.id = id;
    }
    pets.push(pet);
  }
  return pets;
}

export const ADMIN_ROUTES: readonly AdminRoute[] = [
  {
    operationId: 'adminReset',
    method: 'POST',
    path: '/reset',
    async handler({ control }) {
      await control.reset();
      return NO_CONTENT;
    },
  },
  {
    operationId: 'adminSeed',
    method: 'POST',
    path: '/seed',
    body: true,
    async handler(ctx) {
      const pets = parseSeedPets(ctx.body);
      if (pets instanceof ApiError) return pets;
      const stored = await ctx.control.seed(pets);
      return { status: 201, body: `[${stored.map((s) => s.json).join(',')}]` };
    },
  },
  {
    operationId: 'adminSetFault',
    method: 'POST',
    path: '/faults',
    body: true,
    async handler(ctx) {
      const spec = parseFault(ctx.body, ctx.operations);
      if (spec instanceof ApiError) return spec;
      ctx.control.faults.set(spec);
      await ctx.control.faultsShared?.();
      return { status: 200, body: JSON.stringify(ctx.control.faults.list()) };
    },
  },
  {
    operationId: 'adminClearFaults',
    method: 'DELETE',
    path: '/faults',
    async handler({ control }) {
      control.faults.clear();
      await control.faultsShared?.();
      return NO_CONTENT;
    },
  },
];
