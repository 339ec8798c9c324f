// The admin operations for test harnesses in any language (docs/operating.md, "Admin endpoints"): reset,
// seed and faults, under /__admin, opened only by the config's admin key. They are not part
// of the /v1 API: not in its route table, nor in its OpenAPI document.
import { ApiError, MAX_CLOCK_ADVANCE_MS, type NewPet } from '../core/index.js';
import type { SeedPet, StoredPet } from '../store/index.js';
import { parseNewPet, type Reply } from '../api/index.js';
import type { NamespaceControl } from './contract.js';
import { parseFault } from './fault-spec.js';
import type { Faults } from './faults.js';
import { journalPageJson, parseJournalFilter, queryObject, type JournalFilter, type JournalRecord } from './journal.js';
import type { SnapshotInfo } from './snapshots.js';

/** What the admin operations act on: the service instance (store, limiters, faults). */
export interface AdminControl {
  /** Empty store (ids from 1), limits and bans cleared, faults cleared, journal emptied, clock back to real time; snapshots are kept. */
  reset(): Promise<void>;
  /** One durable batch: all or nothing. */
  seed(pets: readonly SeedPet[]): Promise<StoredPet[]>;
  readonly faults: Faults;
  /** With several workers: resolves once every worker has the last change of `faults`. */
  readonly faultsShared?: () => Promise<void>;
  /** The request journal: every worker's entries (with --workers), merged in time order. */
  readonly journal: JournalControl;
  /** The service clock. */
  readonly clock: ClockControl;
  /** Named snapshots, or why they cannot be had here (the message of a 501). */
  readonly snapshots: SnapshotControl | string;
  /** The root's namespaces; undefined inside a namespace, or with namespaces off. */
  readonly namespaces?: NamespaceControl;
}

export interface JournalControl {
  /** The matching entries after `since`, at most `limit`, and the entries evicted since the last clear. */
  query(filter: JournalFilter): Promise<{ records: JournalRecord[]; dropped: number } | ApiError>;
  count(filter: JournalFilter): Promise<number | ApiError>;
  /** Empties the journal (every worker's). */
  clear(): Promise<void>;
}

export interface ClockControl {
  /** Wall time in ms, offset included. */
  now(): number;
  readonly offsetMs: number;
  /** Moves the clock forward (every worker's, before it resolves); rejects with a RangeError past the total bound. */
  advance(ms: number): Promise<void>;
}

export interface SnapshotControl {
  save(name: string): Promise<{ name: string; pets: number } | ApiError>;
  restore(name: string): Promise<undefined | ApiError>;
  list(): SnapshotInfo[];
  delete(name: string): undefined | ApiError;
}

/** What an admin handler is given: plain data, no HTTP objects. */
export interface AdminContext {
  /** The parsed JSON body, on routes that declare `body`; else undefined. */
  readonly body: unknown;
  /** The query string as sent, without "?" ('' for none). */
  readonly rawQuery: string;
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
const NO_NAMESPACES = new ApiError('not_found', 'No namespaces here: they are listed and dropped through the root\'s /__admin/namespaces, while admin.namespaces in the config is above 0.');

/** GET and POST /__admin/clock answer this. */
function clockReply(clock: ClockControl): Reply {
  return { status: 200, body: JSON.stringify({ now: new Date(clock.now()).toISOString(), offsetMs: clock.offsetMs }) };
}

/** A POST /__admin/clock body: exactly {"advanceMs": N}, N an integer from 0 to MAX_CLOCK_ADVANCE_MS. */
export function parseClockAdvance(body: unknown): number | ApiError {
  const shape = 'The body must be {"advanceMs": N}, N an integer number of ms from 0 to ' + String(MAX_CLOCK_ADVANCE_MS) + ' (ten years): the clock only moves forward';
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return new ApiError('invalid_request', `${shape}.`);
  const extra = Object.keys(body).filter((k) => k !== 'advanceMs');
  if (extra.length > 0) return new ApiError('invalid_request', `${shape}; ${JSON.stringify(extra[0])} is not a field.`);
  const ms = (body as { advanceMs?: unknown }).advanceMs;
  if (typeof ms !== 'number' || !Number.isInteger(ms) || ms < 0 || ms > MAX_CLOCK_ADVANCE_MS) {
    return new ApiError('invalid_request', `${shape}; advanceMs is ${ms === undefined ? 'missing' : JSON.stringify(ms)}.`);
  }
  return ms;
}

function snapshotsOf(control: AdminControl): SnapshotControl | ApiError {
  const s = control.snapshots;
  return typeof s === 'string' ? new ApiError('not_implemented', s) : s;
}

function journalFilterOf(rawQuery: string): JournalFilter | ApiError {
  return parseJournalFilter(queryObject(rawQuery));
}

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
    operationId: 'adminListFaults',
    method: 'GET',
    path: '/faults',
    handler({ control }) {
      return { status: 200, body: JSON.stringify({ faults: control.faults.list() }) };
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
  {
    operationId: 'adminListRequests',
    method: 'GET',
    path: '/requests',
    async handler({ control, rawQuery }) {
      const filter = journalFilterOf(rawQuery);
      if (filter instanceof ApiError) return filter;
      const page = await control.journal.query(filter);
      if (page instanceof ApiError) return page;
      return { status: 200, body: journalPageJson(page) };
    },
  },
  {
    operationId: 'adminCountRequests',
    method: 'GET',
    path: '/requests/count',
    async handler({ control, rawQuery }) {
      const filter = journalFilterOf(rawQuery);
      if (filter instanceof ApiError) return filter;
      const count = await control.journal.count(filter);
      if (count instanceof ApiError) return count;
      return { status: 200, body: JSON.stringify({ count }) };
    },
  },
  {
    operationId: 'adminClearRequests',
    method: 'DELETE',
    path: '/requests',
    async handler({ control }) {
      await control.journal.clear();
      return NO_CONTENT;
    },
  },
  {
    operationId: 'adminGetClock',
    method: 'GET',
    path: '/clock',
    handler({ control }) {
      return clockReply(control.clock);
    },
  },
  {
    operationId: 'adminAdvanceClock',
    method: 'POST',
    path: '/clock',
    body: true,
    async handler({ control, body }) {
      const ms = parseClockAdvance(body);
      if (ms instanceof ApiError) return ms;
      try {
        await control.clock.advance(ms);
      } catch (err) {
        if (err instanceof RangeError) return new ApiError('invalid_request', `${err.message}.`);
        throw err;
      }
      return clockReply(control.clock);
    },
  },
  {
    operationId: 'adminListSnapshots',
    method: 'GET',
    path: '/snapshots',
    handler({ control }) {
      const s = snapshotsOf(control);
      if (s instanceof ApiError) return s;
      return { status: 200, body: JSON.stringify({ snapshots: s.list() }) };
    },
  },
  {
    operationId: 'adminSaveSnapshot',
    method: 'PUT',
    path: '/snapshots/{name}',
    async handler({ control, params }) {
      const s = snapshotsOf(control);
      if (s instanceof ApiError) return s;
      const saved = await s.save(params.name ?? '');
      if (saved instanceof ApiError) return saved;
      return { status: 201, body: JSON.stringify(saved) };
    },
  },
  {
    operationId: 'adminDeleteSnapshot',
    method: 'DELETE',
    path: '/snapshots/{name}',
    handler({ control, params }) {
      const s = snapshotsOf(control);
      if (s instanceof ApiError) return s;
      return s.delete(params.name ?? '') ?? NO_CONTENT;
    },
  },
  {
    operationId: 'adminRestoreSnapshot',
    method: 'POST',
    path: '/snapshots/{name}/restore',
    async handler({ control, params }) {
      const s = snapshotsOf(control);
      if (s instanceof ApiError) return s;
      return (await s.restore(params.name ?? '')) ?? NO_CONTENT;
    },
  },
  {
    operationId: 'adminListNamespaces',
    method: 'GET',
    path: '/namespaces',
    handler({ control }) {
      const listed = control.namespaces?.list();
      if (listed === undefined || listed instanceof ApiError) return listed ?? NO_NAMESPACES;
      return { status: 200, body: JSON.stringify({ namespaces: listed }) };
    },
  },
  {
    operationId: 'adminDeleteNamespace',
    method: 'DELETE',
    path: '/namespaces/{name}',
    async handler({ control, params }) {
      const namespaces = control.namespaces;
      if (namespaces === undefined) return NO_NAMESPACES;
      const name = params.name ?? '';
      const dropped = await namespaces.drop(name);
      if (dropped instanceof ApiError) return dropped;
      return dropped ? NO_CONTENT : new ApiError('not_found', `No namespace named ${JSON.stringify(name.slice(0, 80))}.`);
    },
  },
];
