// What an embedder gives startPetstore and gets back: the library's options and handle.
import type { FaultListing, JournalEntry } from '../admin/index.js';
import type { AdminConfig, PetstoreConfig } from '../config/index.js';
import type { Clock, LogLevel, Logger, NewPet, Pet } from '../core/index.js';

/** An embedder's logger as one function, called once per line, every level (filter by `level` as you need). */
export type LogFunction = (level: LogLevel, msg: string, fields?: Record<string, unknown>) => void;

export interface StartOptions {
  /** Port to listen on; 0 picks a free one. Default: the config's port (8080). */
  port?: number;
  /** Address to bind. Default: the config's host (127.0.0.1). */
  host?: string;
  /** A config object (the file's format) or the path of a config file. Default: no keys. */
  config?: string | PetstoreConfig;
  /** The data file; omitted: an in-memory store that writes nothing. */
  dataFile?: string;
  /** A postgres:// URL: pets live in PostgreSQL (the `postgres` package must be installed). Not with dataFile. */
  store?: string;
  /**
   * Time source, for deterministic rate limits in tests. A ManualClock given here is the
   * service's clock itself (admin advances and resets move it); any other Clock is wrapped,
   * and then `handle.clock` is what moves.
   */
  clock?: Clock;
  /** false (default for embedding): no logs; a function: called per line; 'stdout': JSON lines. */
  logger?: false | LogFunction | Logger | 'stdout';
  /** Which environment this instance serves; its base URL is used in Link headers. */
  env?: 'production' | 'staging';
  /** Pets to add at start (after what the data file holds). */
  seed?: ReadonlyArray<NewPet & { id?: number }>;
  /** How long close() lets in-flight requests finish before cutting connections. */
  shutdownGraceMs?: number;
  /** A data file lock not refreshed for this long is taken over (default 10 s; see docs/store.md, One writer). */
  lockStaleMs?: number;
  /** redis:// URL where the rate limits of every process live (docs/scaling.md); default: the config's `limits`, else in process. */
  limits?: string;
  /**
   * The admin endpoints and harness features, in the config file's `admin` form
   * (`{ key: '...' }`, every other admin setting at its default), for a config that has no
   * `admin` of its own (the config's wins). Kept across reloads.
   */
  admin?: AdminConfig;
}

export interface PetstoreHandle {
  /** Base URL, e.g. "http://127.0.0.1:54321/v1". */
  readonly url: string;
  /** The port it listens on (the real one when started with port 0). */
  readonly port: number;
  /** The address it listens on, e.g. "127.0.0.1" or "::1". */
  readonly host: string;
  /** Stop accepting, finish in-flight requests (bounded), make every write durable. */
  close(): Promise<void>;
  /** Empty store (ids restart at 1), limits and bans cleared. */
  reset(): Promise<void>;
  /** Add pets; resolves with them as stored. */
  seed(pets: ReadonlyArray<NewPet & { id?: number }>): Promise<Pet[]>;
  /** Swap in a new config (object or file path; default: the one started with, re-read). */
  reload(config?: string | PetstoreConfig): Promise<void>;
  /** The service clock: move it forward to test backoff, bans and day limits without waiting. */
  readonly clock: HarnessClock;
  /**
   * The request journal, as /__admin/requests: callable (a query, as before) and with query,
   * count, wait and clear. A bad filter rejects with a RangeError; a config without `admin`
   * (or with `admin.journal` 0) rejects with an AdminOffError instead of answering nothing.
   */
  readonly journal: HandleJournal;
  /** Faults, as /__admin/faults: arm, list, clear. Without `admin` in the config: an AdminOffError. */
  readonly faults: HandleFaults;
  /** Named snapshots, as /__admin/snapshots: save, restore, list, delete. */
  readonly snapshots: HandleSnapshots;
  /** Saves (or replaces) a named snapshot; rejects where snapshots cannot be had, or for a 17th name. (snapshots.save) */
  snapshot(name: string): Promise<{ name: string; pets: number }>;
  /** Puts a named snapshot back exactly as saved; rejects for an unknown name. (snapshots.restore) */
  restore(name: string): Promise<void>;
  /**
   * A handle bound to namespace `name` (made now if it is new, as by its first request): its
   * own url (`.../ns/{name}/v1`), clock, reset, seed, journal, faults and snapshots. Throws an
   * AdminOffError without `admin.namespaces`, a RangeError for a bad name, an Error past the bound.
   */
  namespace(name: string): NamespaceHandle;
}

/** A namespace of a running instance, as handle.namespace(name) gives it. */
export interface NamespaceHandle {
  readonly name: string;
  /** Its base URL, e.g. "http://127.0.0.1:54321/ns/test-42/v1". */
  readonly url: string;
  /** Its clock: moving it moves this namespace's time only. */
  readonly clock: HarnessClock;
  /** Empties this namespace only (pets, limits, faults, journal, clock). */
  reset(): Promise<void>;
  seed(pets: ReadonlyArray<NewPet & { id?: number }>): Promise<Pet[]>;
  readonly journal: HandleJournal;
  readonly faults: HandleFaults;
  readonly snapshots: HandleSnapshots;
  snapshot(name: string): Promise<{ name: string; pets: number }>;
  restore(name: string): Promise<void>;
}

/** handle.journal: a function (a query) with methods. */
export interface HandleJournal {
  (filter?: JournalQuery): Promise<JournalPage>;
  /** The matching entries, oldest first, and the entries evicted since the last clear. */
  query(filter?: JournalQuery): Promise<JournalPage>;
  /** How many entries match. */
  count(filter?: JournalQuery): Promise<number>;
  /**
   * Resolves once at least `atLeast` entries match, or `timeoutMs` (0..60,000, default 0) has
   * passed, woken by the recording of each request: wait for a request instead of sleeping.
   */
  wait(filter: JournalQuery & { atLeast: number; timeoutMs?: number }): Promise<{ count: number; met: boolean; waitedMs: number }>;
  /** Empties the journal. */
  clear(): Promise<void>;
}

/** handle.faults. */
export interface HandleFaults {
  /** Arms a fault: the body of POST /__admin/faults (a bad one rejects with a RangeError); resolves with every armed fault. */
  arm(fault: FaultInput): Promise<FaultListing[]>;
  /** Every armed fault with what is left of it. */
  list(): FaultListing[];
  clear(): Promise<void>;
}

/** A fault as POST /__admin/faults takes it (docs/harness.md, Faults). */
export interface FaultInput {
  /** An operationId (listPets, createPet, getPet, ...) or "*" for every /v1 operation. */
  operation: string;
  /** Only the requests of this key (its name in the config), or of none (null). */
  key?: string | null;
  /** Only the requests with this header value (exactly; the name in any case). */
  header?: { name: string; value: string };
  /** Answer this status, 400..599, instead of handling the request. */
  status?: number;
  /** The body of that answer (any JSON value); default: the Error body of the status. */
  body?: unknown;
  /** Headers added to that answer. */
  headers?: Record<string, string>;
  /** Retry-After of that answer, in seconds (429 and 503: 1 by default). */
  retryAfter?: number;
  /** Break the connection instead (a create is stored first). */
  kind?: 'reset' | 'empty' | 'truncated';
  /** Wait first: ms, or a uniform range. */
  delayMs?: number | { min: number; max: number };
  /** The next `count` matching requests (default 1)... */
  count?: number;
  /** ...or each one with this chance, until cleared. */
  probability?: number;
  /** The generator's seed (with probability or a delay range). */
  seed?: number;
}

/** handle.snapshots. */
export interface HandleSnapshots {
  save(name: string): Promise<{ name: string; pets: number }>;
  restore(name: string): Promise<void>;
  /** The snapshots kept, oldest first. */
  list(): Array<{ name: string; pets: number; time: string }>;
  /** Deletes one; throws for an unknown name. */
  delete(name: string): void;
}

/** The service clock as a handle shows it. */
export interface HarnessClock {
  /** Wall time in ms since the Unix epoch, the offset included. */
  now(): number;
  /** Monotonic time in ms, the offset included. */
  monotonic(): number;
  /** How far the clock is ahead of real time, in ms (0 after a reset). */
  readonly offsetMs: number;
  /** Moves the clock forward by ms (>= 0); a RangeError for a negative amount, or past a thousand years in total. */
  advance(ms: number): void;
}

/** Filters of handle.journal(), as those of GET /__admin/requests. */
export interface JournalQuery {
  method?: string;
  /** Exact path, without the query (for example "/v1/pets"). */
  path?: string;
  /** Paths starting with this (for example "/v1/pets/"). */
  pathPrefix?: string;
  status?: number;
  /** An API key's name in the config. */
  key?: string;
  /** An operationId: listPets, createPet, getPet... */
  operation?: string;
  /** A request header "name:value" (exact value), or several that must all match. */
  header?: string | string[];
  /** A requestId: only the entries after it. */
  since?: string;
  /** 1..1000, default 100. */
  limit?: number;
}

/** One recorded /v1 request, as GET /__admin/requests shows it. */
export type JournalRequest = JournalEntry;

export interface JournalPage {
  requests: JournalRequest[];
  /** Entries evicted since the journal was last cleared. */
  dropped: number;
}

/**
 * A worker's line to the other workers of `--workers N`, which the cluster passes to
 * startWithConfig: the server answers metrics over it and hands it to the admin harness.
 */
export type { Peers } from '../admin/index.js';

export { StartError } from '../core/index.js';
/** What a handle's admin call throws when the config has that feature off. */
export { AdminOffError } from '../admin/index.js';
export type { StartErrorKind } from '../core/index.js';
