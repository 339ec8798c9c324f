// The config as a user writes it (petstore.config.json, or the object given to
// startPetstore): every field optional, each documented, so editors complete and check it.
// parse.ts validates it at run time (a file is not type-checked); test/config/file-format
// checks that every field typed here is one the parser accepts.

/** Requests per minute and per day, each an integer from 1 to 10^12. */
export interface PlanLimits {
  /** Capacity of the minute bucket, refilled continuously at perMinute/60 a second. */
  perMinute: number;
  /** Capacity of the day bucket, refilled continuously at perDay/86400 a second. */
  perDay: number;
}

interface KeyFields {
  /**
   * A plan named in `plans` (default: `free`, `pro`, `business`), or `enterprise`, the custom
   * plan whose limits come from the key's own `limits`.
   */
  plan: string;
  /** A name for logs (the key itself never appears in one). Default: `key #N`. */
  name?: string;
  /** This key's own limits, overriding its plan's; required with plan `enterprise`. */
  limits?: PlanLimits;
}

/** An API key given in clear: token68 characters (RFC 6750), at most once in a config. */
export interface ClearKeyConfig extends KeyFields {
  /** The bearer key itself. */
  key: string;
  sha256?: never;
}

/** An API key given as its digest, so that a config file need not hold the secret. */
export interface DigestKeyConfig extends KeyFields {
  /** Hex SHA-256 of the key (`printf %s "$KEY" | sha256sum`), 64 characters. */
  sha256: string;
  key?: never;
}

/** An API key: in clear (`key`) or by its digest (`sha256`), exactly one of the two. */
export type KeyConfig = ClearKeyConfig | DigestKeyConfig;

/** The config file's format (docs/configuration.md). Unknown fields are refused at start. */
export interface PetstoreConfig {
  /** A JSON schema reference for editors; ignored by the service. */
  $schema?: string;
  /** Address to bind. Default `127.0.0.1`. */
  host?: string;
  /** Port to listen on, 0 to 65535 (0 picks a free one). Default `8080`. */
  port?: number;
  /**
   * The data file, relative to the config file's directory. Default: none, pets are kept in
   * memory. Ignored by startPetstore, which takes its own `dataFile` option.
   */
  dataFile?: string | null;
  /**
   * A `postgres://` URL: pets live in PostgreSQL (not together with `dataFile`). Ignored by
   * startPetstore, which takes its own `store` option. See docs/scaling.md.
   */
  store?: string;
  /**
   * A `redis://` or `rediss://` URL: the rate limits of every process live in Redis or Valkey.
   * Applied at restart. See docs/scaling.md.
   */
  limits?: string;
  /**
   * While Redis does not answer, an id (key or client address) the process never heard of from
   * Redis starts with full buckets (`"open"`, the default) or empty ones (`"strict"`).
   * Applied at restart. See docs/scaling.md.
   */
  limitsOutage?: 'open' | 'strict';
  /**
   * Processes sharing the port (node:cluster), 1 to 64; above 1 it needs both `store` and
   * `limits`. Command line only: startPetstore runs one server in the embedder's process.
   * Applied at restart. See docs/scaling.md.
   */
  workers?: number;
  /**
   * Where the in-process limiter saves the keys' buckets and bans (relative to this file), so a
   * restart keeps them; default: beside the data file, `<dataFile>.limits.json`. Not with `limits`.
   */
  limitsFile?: string;
  /** Base URLs (absolute http(s), ASCII, ending in `/v1`) used in links with `env`. Default: the example.com URLs. */
  environments?: { production?: string; staging?: string };
  /** Plan name -> limits. Default: free 60/1,000, pro 300/10,000, business 1,000/100,000. */
  plans?: Record<string, PlanLimits>;
  /** The API keys. Default: none (every request under /v1 but the OpenAPI document is a 401). */
  keys?: KeyConfig[];
  /** Temporary ban after repeated 429s. Default `{ after: 20, seconds: 300 }`. */
  ban?: {
    /** Further 429s a key (or address) may receive before it is banned. */
    after: number;
    /** Length of a ban, 0 (no bans) to 31,536,000 (a year). */
    seconds: number;
  };
  /** Budget per client address for requests without a valid key. Default `{ perMinute: 30, perDay: 500 }`. */
  anonymous?: PlanLimits;
  /** Client addresses remembered for that budget, least recent evicted. Default `100000`. */
  anonymousTableSize?: number;
  /** Largest accepted request body in bytes. Default `65536`. */
  maxBodyBytes?: number;
  /** Creates that may wait for the data file's write in flight; past it 503 at once. Default `10000`. */
  maxQueuedWrites?: number;
  /**
   * Behind a reverse proxy: take the client address from the last `X-Forwarded-For` hop, and
   * the links' scheme and host from the last `Forwarded` element or `X-Forwarded-Proto`/`-Host`.
   * Default `false`.
   */
  trustProxy?: boolean;
  /** Origins allowed to call from a browser (`"*"` for any). Default: none, no CORS header. */
  cors?: { origins: string[] };
  /** Least level logged. Default `info`. */
  logLevel?: 'debug' | 'info' | 'warn' | 'error' | 'silent';
  /** Concurrent connections; past it new ones are closed at once. Default `10000`. */
  maxConnections?: number;
  /** Bytes of unfinished request bodies held at once, at least maxBodyBytes. Default `33554432` (32 MiB). */
  maxPendingBodyBytes?: number;
  /** Hours an `Idempotency-Key` is remembered after its create, 1 to 8760. Default `24`; applied at restart. */
  idempotencyRetentionHours?: number;
  /** `true`: GET /metrics answers the Prometheus text format (docs/operating.md, Metrics). Default `false`; applied at restart. */
  metrics?: boolean;
  /**
   * The key that opens `/__admin/reset`, `/seed` and `/faults` (docs/operating.md, Admin endpoints), in
   * clear or as its hex SHA-256; not one of `keys`. Default: none, those paths do not exist.
   */
  admin?: ({ key: string; sha256?: never } | { sha256: string; key?: never }) & {
    /** Requests kept by the request journal (GET /__admin/requests), 0 (off) to 100000. Default `1000`. */
    journal?: number;
    /** Namespaces (/ns/{name}, isolated worlds for parallel tests) there may be at once, 0 (off) to 10000. Default `0`. */
    namespaces?: number;
  };
}
