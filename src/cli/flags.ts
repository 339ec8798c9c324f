// The command line's options as data: the flags parseArgs accepts (args.ts builds its options
// from this table), the environment variable each one falls back to, and the variables that
// have no flag. docs/configuration.md's table is generated from it (npm run docs).

export interface CliOption {
  /** The flag without its dashes; undefined for an environment variable with no flag. */
  readonly flag?: string;
  /** The flag's one-letter alias. */
  readonly short?: string;
  /** What the flag takes (FILE, URL, N); undefined for a switch. */
  readonly arg?: string;
  /** The environment variable used when the flag is not given. */
  readonly env?: string;
  /** What applies when neither is given, in words. */
  readonly default?: string;
  readonly meaning: string;
}

export const CLI_OPTIONS: readonly CliOption[] = [
  { flag: 'config', arg: 'FILE', env: 'PETSTORE_CONFIG', default: '`./petstore.config.json`, else the built-in demo config (pets in memory)', meaning: 'keys, plans and settings' },
  { flag: 'data', arg: 'FILE', env: 'PETSTORE_DATA', default: 'the config\'s `dataFile`; without one, in memory', meaning: 'where pets are kept' },
  { flag: 'memory', meaning: 'keep pets in memory only; write nothing' },
  { flag: 'store', arg: 'URL', env: 'PETSTORE_STORE', default: 'the config\'s `store`', meaning: 'keep pets in PostgreSQL, `postgres://user:password@host:5432/db`' },
  { flag: 'port', arg: 'N', env: 'PORT', default: 'the config\'s `port` (8080)', meaning: 'port to listen on; `0` picks a free one' },
  { flag: 'host', arg: 'H', env: 'HOST', default: 'the config\'s `host` (127.0.0.1)', meaning: 'address to bind' },
  { flag: 'env', arg: 'NAME', default: 'none', meaning: '`production` or `staging`: that environment\'s base URL is used in links' },
  { flag: 'seed', arg: 'FILE', meaning: 'add the pets of a JSON array at start (validated like POST bodies)' },
  { flag: 'limits', arg: 'URL', env: 'PETSTORE_LIMITS', default: 'the config\'s `limits`, else in process', meaning: 'keep the rate limits of every process in Redis, `redis://host:6379/0`' },
  { flag: 'workers', arg: 'N', env: 'PETSTORE_WORKERS', default: 'the config\'s `workers` (1)', meaning: 'N processes share the port, 1 to 64; above 1 needs a store URL and a limits URL' },
  { flag: 'log-level', arg: 'LEVEL', default: 'the config\'s `logLevel` (`info`)', meaning: '`debug`, `info`, `warn`, `error` or `silent`' },
  { flag: 'help', short: 'h', meaning: 'print the usage and exit' },
  { flag: 'version', short: 'v', meaning: 'print the version and exit' },
  { env: 'PETSTORE_LOCK_STALE_MS', default: '10000', meaning: 'milliseconds a data file lock may go without a heartbeat before a start takes it over (100 to 3600000)' },
  { env: 'PETSTORE_ADMIN_KEY', default: 'none', meaning: 'turns the admin endpoints on with this key (16 or more token characters), every other admin setting at its default, for a config without `admin` (the config\'s wins); never printed' },
];

/** The options of node:util parseArgs, from the table. */
export function parseArgsOptions(): Record<string, { type: 'string' | 'boolean'; short?: string }> {
  const options: Record<string, { type: 'string' | 'boolean'; short?: string }> = {};
  for (const o of CLI_OPTIONS) {
    if (o.flag === undefined) continue;
    options[o.flag] = o.short === undefined ? { type: o.arg === undefined ? 'boolean' : 'string' } : { type: o.arg === undefined ? 'boolean' : 'string', short: o.short };
  }
  return options;
}
