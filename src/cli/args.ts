// The command line's arguments: flags, then the precedence flag > environment > config file >
// default, resolved into what the service starts with.
import { existsSync } from 'node:fs';
import { basename, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { ConfigError, adminKeyProblem, limitsUrlProblem, loadConfigFile, parseConfig, percentEncodingProblem, type AdminConfig, type Config, type PetstoreConfig } from '../config/index.js';
import { MAX_WORKERS, clip } from '../core/index.js';
import { MAX_LOCK_STALE_MS, MIN_LOCK_STALE_MS } from '../store/index.js';
import { parseArgsOptions } from './flags.js';
import { petsLocation, storeSetting } from './pets-location.js';

import defaultConfig from '../../petstore.config.json' with { type: 'json' };

// The demo config without its dataFile: started without a config file (by npx, or a test
// harness in some directory), the service must not write data/ into the caller's directory.
const { dataFile: _demoDataFile, ...BUILT_IN_CONFIG } = defaultConfig;

export const USAGE = `Usage: node dist/petstore.js [options]
       node dist/petstore.js keys add|list|revoke ...   (API keys in the config file; keys --help)

  --config FILE        config file (default: ./petstore.config.json, else the built-in demo config)
  --data FILE          data file (default: the config's dataFile; without one, and with
                       the built-in config, pets are kept in memory and lost at exit)
  --memory             keep pets in memory only; write nothing
  --store URL          keep pets in PostgreSQL, postgres://user:password@host:5432/db (npm install postgres)
  --port N             port to listen on; 0 picks a free one (default 8080)
  --host H             address to bind (default 127.0.0.1)
  --env NAME           production or staging: whose base URL appears in links
  --seed FILE          add the pets of a JSON array at start
  --limits URL         keep the rate limits of every process in Redis (redis://host:6379/0)
  --workers N          N processes share the port (1 to 64; above 1 needs --store and --limits)
  --log-level LEVEL    debug, info, warn, error or silent (default info)
  --help               print this help
  --version            print the version

Environment: PETSTORE_CONFIG, PETSTORE_DATA, PETSTORE_STORE, PETSTORE_LIMITS, PETSTORE_WORKERS, PORT, HOST (a flag wins over its variable);
PETSTORE_ADMIN_KEY: the admin endpoints on with this key, for a config without "admin" (never printed);
PETSTORE_LOCK_STALE_MS (default 10000): a data file lock not refreshed for that long is taken over.
Signals: SIGTERM/SIGINT stop gracefully; SIGHUP reloads the config file.
The first line on stdout is "petstore listening on http://HOST:PORT/v1".`;

/**
 * The command as the user typed it, for --help: the name of a link to the bundle (the
 * `petstore` bin of an install), else `node` and the bundle's path from here.
 */
export function invokedAs(script: string | undefined, cwd = process.cwd()): string {
  if (script === undefined) return 'node dist/petstore.js';
  if (!script.endsWith('.js')) return basename(script);
  const path = relative(cwd, script);
  return `node ${path.startsWith('..') || path === '' ? script : path}`;
}

export interface Io {
  out(line: string): void;
  err(line: string): void;
}

export interface Resolved {
  config: Config;
  configSource: string | PetstoreConfig;
  dataFile: string | undefined;
  /** A postgres:// URL: pets live in PostgreSQL. */
  store: string | undefined;
  /** --memory was given: pets in memory by request, not for want of a data file. */
  memory: boolean;
  port: number;
  host: string;
  env: 'production' | 'staging' | undefined;
  seedFile: string | undefined;
  logLevel: Config['logLevel'];
  /** Where the rate limits live (flag > PETSTORE_LIMITS > config); undefined: in process. */
  limits: string | undefined;
  /** PETSTORE_ADMIN_KEY as an admin, for a config without one (the config's wins); kept across reloads. */
  admin: AdminConfig | undefined;
  /** Processes sharing the port (flag > PETSTORE_WORKERS > config); 1: this process serves alone. */
  workers: number;
}

/** Run the service until a signal stops it; resolves with the exit code. */
export class UsageError extends Error {}

export type Parsed = Record<string, string | boolean | undefined>;

export function parse(argv: readonly string[]): Parsed | 'help' | 'version' {
  let values: Parsed;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      strict: true,
      allowPositionals: false,
      options: parseArgsOptions(),
    }));
  } catch (err) {
    throw new UsageError(`${(err as Error).message}\n${USAGE}`);
  }
  if (values.help) return 'help';
  if (values.version) return 'version';
  if (values.memory && values.data !== undefined) throw new UsageError('--data and --memory cannot be used together');
  return values;
}

function parsePort(raw: string, where: string): number {
  if (!/^[0-9]{1,5}$/.test(raw) || Number(raw) > 65535) throw new UsageError(`${where} must be a port number from 0 to 65535, got "${clip(raw, 60)}"`);
  return Number(raw);
}

/** PETSTORE_LOCK_STALE_MS: how long a data file lock may go unrefreshed (docs/store.md, One writer). */
export function lockStaleFromEnv(env: NodeJS.ProcessEnv): number | undefined {
  const raw = env.PETSTORE_LOCK_STALE_MS;
  if (raw === undefined || raw === '') return undefined;
  const ms = /^[0-9]{1,7}$/.test(raw) ? Number(raw) : NaN;
  if (!(ms >= MIN_LOCK_STALE_MS && ms <= MAX_LOCK_STALE_MS)) {
    throw new UsageError(`PETSTORE_LOCK_STALE_MS must be a whole number of milliseconds from ${MIN_LOCK_STALE_MS} to ${MAX_LOCK_STALE_MS}, got "${raw}"`);
  }
  return ms;
}

/** The variable that turns the admin endpoints on with its key (docs/operating.md). */
export const ADMIN_KEY_ENV = 'PETSTORE_ADMIN_KEY';

/** PETSTORE_ADMIN_KEY as the config file's `admin` form (every other setting at its default); the key is never echoed. */
function adminFromEnv(env: NodeJS.ProcessEnv): AdminConfig | undefined {
  const key = env[ADMIN_KEY_ENV];
  if (key === undefined || key === '') return undefined;
  const problem = adminKeyProblem(key);
  if (problem !== undefined) throw new UsageError(`${ADMIN_KEY_ENV} ${problem}`);
  return { key };
}

export async function resolveOptions(flags: Parsed, env: NodeJS.ProcessEnv, io: Io): Promise<Resolved> {
  const str = (name: string): string | undefined => (typeof flags[name] === 'string' ? (flags[name] as string) : undefined);
  const explicitConfig = str('config') ?? (env.PETSTORE_CONFIG || undefined);
  const admin = adminFromEnv(env);
  const defaults = { admin, adminSource: ADMIN_KEY_ENV };
  let config: Config;
  let configSource: string | PetstoreConfig;
  if (explicitConfig !== undefined || existsSync('petstore.config.json')) {
    configSource = resolve(explicitConfig ?? 'petstore.config.json');
    config = await loadConfigFile(configSource, defaults);
  } else {
    // Said once the start is through, with where the pets and limits really live (places.ts).
    configSource = BUILT_IN_CONFIG;
    config = parseConfig(configSource, 'built-in demo config', process.cwd(), defaults);
  }
  const where = petsLocation(flags, env, config);
  if (typeof where === 'string') throw new UsageError(where);
  const { dataFile, store } = where;
  const portRaw = str('port') ?? (env.PORT || undefined);
  const port = portRaw === undefined ? config.port : parsePort(portRaw, str('port') !== undefined ? '--port' : 'PORT');
  const host = str('host') ?? (env.HOST || undefined) ?? config.host;
  const envName = str('env');
  if (envName !== undefined && envName !== 'production' && envName !== 'staging') {
    throw new UsageError(`--env must be production or staging, got "${envName}"`);
  }
  const level = str('log-level');
  if (level !== undefined && !['debug', 'info', 'warn', 'error', 'silent'].includes(level)) {
    throw new UsageError(`--log-level must be debug, info, warn, error or silent, got "${level}"`);
  }
  const limitsFlag = str('limits') ?? (env.PETSTORE_LIMITS || undefined);
  const limitsSetting = str('limits') !== undefined ? '--limits' : 'PETSTORE_LIMITS';
  const limits = limitsFlag ?? config.limits;
  // Checked here, where it is known which setting gave the URL and which part of it is bad:
  // the drivers' decoding would say only "URI malformed". A value from the config file is a
  // config error (exit 1). The limits URL's other problems come after, in its own terms.
  const fromFile = typeof configSource === 'string' ? configSource : 'built-in demo config';
  const limitsEncoding = limits === undefined ? undefined : percentEncodingProblem(limits, limitsFlag !== undefined ? limitsSetting : '"limits"');
  const limitsProblem = limitsFlag === undefined || limitsEncoding !== undefined ? undefined : limitsUrlProblem(limitsFlag);
  if (limitsProblem !== undefined) throw new UsageError(`${limitsSetting} ${limitsProblem}`);
  const storeFrom = storeSetting(flags, env);
  const storeEncoding = store === undefined ? undefined : percentEncodingProblem(store, storeFrom ?? '"store"');
  for (const [problem, fromConfig] of [[limitsEncoding, limitsFlag === undefined], [storeEncoding, storeFrom === undefined]] as const) {
    if (problem === undefined) continue;
    if (fromConfig) throw new ConfigError(fromFile, [problem]);
    throw new UsageError(problem);
  }
  const workers = resolveWorkers(str('workers'), env.PETSTORE_WORKERS || undefined, config.workers);
  if (workers > 1 && (store === undefined || limits === undefined)) {
    const missing = [store === undefined ? 'a store URL (--store, PETSTORE_STORE or "store")' : '', limits === undefined ? 'a limits URL (--limits, PETSTORE_LIMITS or "limits")' : '']
      .filter((m) => m !== '').join(' and ');
    throw new UsageError(`${workers} workers need ${missing}: one data file has one writer, and limits kept in each process would multiply every budget`);
  }
  return {
    limits, workers, admin,
    config, configSource, dataFile, store, memory: flags.memory === true, port, host, env: envName, seedFile: str('seed'),
    logLevel: (level as Config['logLevel'] | undefined) ?? config.logLevel,
  };
}

/** --workers / PETSTORE_WORKERS / the config's workers (already checked by the config). */
function resolveWorkers(flag: string | undefined, envValue: string | undefined, fromConfig: number): number {
  const raw = flag ?? envValue;
  if (raw === undefined) return fromConfig;
  if (!/^[0-9]{1,3}$/.test(raw) || Number(raw) < 1 || Number(raw) > MAX_WORKERS) {
    throw new UsageError(`${flag !== undefined ? '--workers' : 'PETSTORE_WORKERS'} must be a whole number from 1 to ${MAX_WORKERS}, got "${raw}"`);
  }
  return Number(raw);
}

/**
 * The warning for pets kept in memory for want of a data file (a config without dataFile),
 * or undefined when that is what was asked for (--memory) or already said (built-in config).
 */
export function inMemoryWarning(resolved: Resolved): string | undefined {
  if (resolved.dataFile !== undefined || resolved.store !== undefined || resolved.memory || typeof resolved.configSource !== 'string') return undefined;
  return 'no data file: pets are kept in memory and will not survive a restart (set dataFile in the config, or --data FILE)';
}
