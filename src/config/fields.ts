// The config file's top-level fields as data: which exist (parse.ts refuses any other), the
// value a config without the field gets, when a change takes effect in a running service, and
// what each means. docs/configuration.md's table is generated from this one (npm run docs),
// and test/config/fields.test.ts checks the defaults against parseConfig and `applied`
// against what a reload really applies.
import type { PetstoreConfig } from './file-format.js';

export interface ConfigField {
  /**
   * What a config without the field gets, in the file's JSON form (a Map as an object);
   * undefined: nothing (the field is off or absent).
   */
  readonly default: unknown;
  /** What the default means in words, when the value alone does not say it. */
  readonly defaultNote?: string;
  /** When a changed value takes effect: on a reload (SIGHUP), or only at the next start. */
  readonly applied: 'reload' | 'restart';
  readonly meaning: string;
}

/** Every top-level field of the config file, in the order the documentation lists them. */
export const CONFIG_FIELDS = {
  host: { default: '127.0.0.1', applied: 'restart', meaning: 'address to listen on' },
  port: { default: 8080, applied: 'restart', meaning: 'port to listen on, 0 to 65535 (0 picks a free one)' },
  dataFile: {
    default: undefined, defaultNote: 'none: pets in memory', applied: 'restart',
    meaning: 'the data file, relative to the config file\'s directory; not with `store`',
  },
  store: {
    default: undefined, defaultNote: 'none', applied: 'restart',
    meaning: 'a PostgreSQL URL, `postgres://user:password@host:5432/db`: pets live there; not with `dataFile`',
  },
  limits: {
    default: undefined, defaultNote: 'none: in process', applied: 'restart',
    meaning: 'a `redis://` or `rediss://` URL where the rate limits of every process live',
  },
  limitsOutage: {
    default: 'open', applied: 'restart',
    meaning: 'while Redis does not answer, a key or address a process never heard of starts with full buckets (`"open"`) or empty ones (`"strict"`)',
  },
  workers: {
    default: 1, applied: 'restart',
    meaning: 'processes sharing the port, 1 to 64; above 1 needs `store` and `limits`; command line only (`startPetstore` refuses it)',
  },
  limitsFile: {
    default: undefined, defaultNote: 'beside the data file, `<dataFile>.limits.json`', applied: 'restart',
    meaning: 'where the in-process limiter saves the keys\' buckets and bans (relative to the config file); not with `limits`',
  },
  environments: {
    default: { production: 'https://api.example.com/v1', staging: 'https://staging-api.example.com/v1' }, applied: 'reload',
    meaning: 'base URLs (absolute `http(s)`, ASCII, ending in `/v1`) of `production` and `staging`, used in links with `--env`',
  },
  plans: {
    default: { free: { perMinute: 60, perDay: 1000 }, pro: { perMinute: 300, perDay: 10000 }, business: { perMinute: 1000, perDay: 100000 } },
    applied: 'reload',
    meaning: 'plan name -> `{perMinute, perDay}`, each an integer from 1 to 10^12',
  },
  keys: {
    default: [], applied: 'reload',
    meaning: 'the API keys, each `{key | sha256, plan, name?, limits?}`; `enterprise` keys need `limits`',
  },
  ban: { default: { after: 20, seconds: 300 }, applied: 'reload', meaning: 'temporary ban after repeated 429s; `seconds` from 0 (no bans) to 31,536,000' },
  anonymous: { default: { perMinute: 30, perDay: 500 }, applied: 'reload', meaning: 'budget per client address for requests without a valid key' },
  anonymousTableSize: { default: 100000, applied: 'reload', meaning: 'client addresses remembered for that budget (least recent evicted)' },
  maxBodyBytes: { default: 65536, applied: 'reload', meaning: 'largest accepted request body, in bytes' },
  maxPendingBodyBytes: {
    default: 33554432, defaultNote: '32 MiB', applied: 'reload',
    meaning: 'bytes of unfinished request bodies held at once, all connections together; past it 503; at least `maxBodyBytes`',
  },
  maxQueuedWrites: { default: 10000, applied: 'restart', meaning: 'creates that may wait for the data file\'s write in flight; past it 503 at once' },
  maxConnections: { default: 10000, applied: 'reload', meaning: 'concurrent connections; past it new ones are closed at once' },
  trustProxy: {
    default: false, applied: 'reload',
    meaning: 'behind a reverse proxy: the client address from the last `X-Forwarded-For` hop, the links\' scheme and host from the proxy',
  },
  cors: { default: { origins: [] }, defaultNote: 'no CORS header', applied: 'reload', meaning: 'origins allowed to call from a browser (`"*"`: any)' },
  logLevel: { default: 'info', applied: 'restart', meaning: 'least level logged: `debug`, `info`, `warn`, `error`, `silent`' },
  idempotencyRetentionHours: { default: 24, applied: 'restart', meaning: 'how long a create\'s `Idempotency-Key` is remembered, 1 to 8760 hours' },
  metrics: { default: false, applied: 'restart', meaning: '`true`: `GET /metrics` answers the Prometheus text format' },
  admin: {
    default: undefined, defaultNote: 'none: no `/__admin` paths', applied: 'reload',
    meaning: '`{"sha256": "<hex digest>"}` or `{"key": "..."}` (16 characters at least): the key that opens `/__admin`; not one of `keys`. `admin.journal`: requests the request journal keeps, `0` (off) to `100000`, default `1000`; read at start (a reload that changes it is logged as needing a restart). `admin.namespaces`: how many isolated namespaces (`/ns/{name}/...`) there may be at once, `0` (off) to `10000`, default `0`; read at start',
  },
  $schema: { default: undefined, defaultNote: 'none', applied: 'reload', meaning: 'a JSON schema reference for editors; ignored' },
} as const satisfies Record<keyof PetstoreConfig, ConfigField>;

export type ConfigFieldName = keyof typeof CONFIG_FIELDS;
