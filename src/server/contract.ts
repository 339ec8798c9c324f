// What an embedder gives startPetstore and gets back: the library's options and handle.
import type { JournalEntry } from '../api/index.js';
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
   * The request journal (recorded only while the config has `admin` with a journal size
   * above 0), as GET /__admin/requests answers it. A bad filter rejects with a RangeError.
   */
  journal(filter?: JournalQuery): Promise<JournalPage>;
  /** Saves (or replaces) a named snapshot; rejects where snapshots cannot be had, or for a 17th name. */
  snapshot(name: string): Promise<{ name: string; pets: number }>;
  /** Puts a named snapshot back exactly as saved; rejects for an unknown name. */
  restore(name: string): Promise<void>;
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
  status?: number;
  /** An API key's name in the config. */
  key?: string;
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

export { StartError } from '../core/index.js';
export type { StartErrorKind } from '../core/index.js';
