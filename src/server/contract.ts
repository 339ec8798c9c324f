// What an embedder gives startPetstore and gets back: the library's options and handle.
import type { PetstoreConfig } from '../config/index.js';
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
  /** Time source, for deterministic rate limits in tests. */
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
}

export { StartError } from '../core/index.js';
export type { StartErrorKind } from '../core/index.js';
