// What an embedder gives startPetstore and gets back: the library's options and handle.
import type { Clock, LogLevel, Logger, NewPet, Pet } from '../core/index.js';

export type LogFunction = (level: LogLevel, msg: string, fields?: Record<string, unknown>) => void;

export interface StartOptions {
  /** Port to listen on; 0 picks a free one. Default: the config's port (8080). */
  port?: number;
  /** Address to bind. Default: the config's host (127.0.0.1). */
  host?: string;
  /** A config object (the file's format) or the path of a config file. Default: no keys. */
  config?: string | Record<string, unknown>;
  /** The data file; omitted: an in-memory store that writes nothing. */
  dataFile?: string;
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
  /** A data file lock not refreshed for this long is taken over (default 10 s; see README, Store). */
  lockStaleMs?: number;
  /** redis:// URL where the rate limits of every process live (CONTRACT 9); default: the config's `limits`, else in process. */
  limits?: string;
}

export interface PetstoreHandle {
  /** Base URL, e.g. "http://127.0.0.1:54321/v1". */
  readonly url: string;
  readonly port: number;
  readonly host: string;
  /** Stop accepting, finish in-flight requests (bounded), make every write durable. */
  close(): Promise<void>;
  /** Empty store (ids restart at 1), limits and bans cleared. */
  reset(): Promise<void>;
  /** Add pets; resolves with them as stored. */
  seed(pets: ReadonlyArray<NewPet & { id?: number }>): Promise<Pet[]>;
  /** Swap in a new config (object or file path; default: the one started with, re-read). */
  reload(config?: string | Record<string, unknown>): Promise<void>;
}

/** A start failure with one clear sentence for the operator (bad config, data file, port). */
export class StartError extends Error {}
