// The config as the rest of the service reads it: validated once, then frozen. Keys are held
// only as SHA-256 digests (see digest.ts).
import type { Limits, LogLevel } from '../core/index.js';

export interface KeyEntry {
  /** Hex SHA-256 of the key: how the key is looked up, and its id in the limiter. */
  readonly digest: string;
  /** A name for logs (never the key itself). */
  readonly name: string;
  readonly plan: string;
  readonly limits: Limits;
}

export interface Config {
  readonly host: string;
  readonly port: number;
  /** Absolute path, or undefined for an in-memory store. */
  readonly dataFile: string | undefined;
  /** A postgres:// URL: pets live in PostgreSQL (never together with dataFile). */
  readonly store: string | undefined;
  readonly environments: Readonly<Record<'production' | 'staging', string>>;
  /** Plan name -> limits; a Map, so that only the plans the config names are found. */
  readonly plans: ReadonlyMap<string, Limits>;
  readonly keys: ReadonlyMap<string, KeyEntry>;
  readonly ban: { readonly after: number; readonly seconds: number };
  readonly anonymous: Limits;
  /** Size of the per-address table of keyless clients before the least recent are evicted. */
  readonly anonymousTableSize: number;
  readonly maxBodyBytes: number;
  /** Creates that may wait for the data file's batch in flight; past it, 503 at once. */
  readonly maxQueuedWrites: number;
  readonly trustProxy: boolean;
  readonly cors: { readonly origins: readonly string[] };
  readonly logLevel: LogLevel | 'silent';
  /** Concurrent connections; past it new ones are closed at once. */
  readonly maxConnections: number;
  /** Bytes of unfinished request bodies held in memory at once, all requests together. */
  readonly maxPendingBodyBytes: number;
  /** How long a create's Idempotency-Key is remembered, in hours (applied at start). */
  readonly idempotencyRetentionHours: number;
  /** GET /metrics answers (Prometheus text format); otherwise it is an unknown path. */
  readonly metrics: boolean;
  /** The key that opens /__admin (its digest); undefined: those paths do not exist. */
  readonly admin: {
    readonly digest: string;
    /** Requests the journal keeps (GET /__admin/requests), 0..100,000; 0: no journal. Default 1,000. */
    readonly journal: number;
    /** Namespaces (/ns/{name}) there may be at once, 0..10,000; 0: none (/ns/... is an unknown path). Default 0. */
    readonly namespaces: number;
  } | undefined;
  /** redis:// URL of the shared rate-limit state (docs/scaling.md); undefined: limits in process. */
  readonly limits: string | undefined;
  /**
   * What a process limits from, while Redis does not answer, for an id it never heard of from
   * Redis: 'open' (default) starts it as a new id (full buckets); 'strict' starts it empty.
   */
  readonly limitsOutage: 'open' | 'strict';
  /** Processes sharing the port (node:cluster); 1: one process, as without the field. */
  readonly workers: number;
  /** Absolute path where the in-process key limiter's state is saved (restarts keep it); undefined: beside the data file, if any. */
  readonly limitsFile: string | undefined;
}
