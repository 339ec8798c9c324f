// What the start says on stderr about where things are kept: the pets (memory, a data file,
// PostgreSQL) and the rate limits (this process, a limits file, Redis), as resolved from the
// flags, the environment and the config, so that an operator sees at once where the data
// went. A URL is shown without its password and without its query (which may carry one).
import type { Resolved } from './args.js';

/** The URL without password and query, or a neutral phrase when it is not a URL. */
export function withoutSecrets(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return `${url.split(':')[0] ?? ''}://(not a valid URL)`;
  }
  u.password = '';
  u.search = '';
  u.hash = '';
  return u.href;
}

/** Where the pets live. */
export function petsPlace(resolved: Pick<Resolved, 'store' | 'dataFile'>): string {
  if (resolved.store !== undefined) return `pets in PostgreSQL, ${withoutSecrets(resolved.store)}`;
  if (resolved.dataFile !== undefined) return `pets in the data file ${resolved.dataFile}`;
  return 'pets in memory only, lost at exit';
}

/** Where the rate limits live; mirrors the server's choice of a limits file (start.ts). */
export function limitsPlace(resolved: Pick<Resolved, 'limits' | 'dataFile' | 'config'>): string {
  if (resolved.limits !== undefined) return `rate limits in Redis, ${withoutSecrets(resolved.limits)}`;
  const file = resolved.config.limitsFile ?? (resolved.dataFile === undefined ? undefined : `${resolved.dataFile}.limits.json`);
  if (file !== undefined) return `rate limits in this process, keys' day budgets and bans kept in ${file}`;
  return 'rate limits in this process only, full again at every restart';
}

/** The one start line on stderr (before the ready line on stdout). */
export function startLine(resolved: Resolved): string {
  const config = typeof resolved.configSource === 'string'
    ? `config ${resolved.configSource}`
    : 'no ./petstore.config.json; using the built-in demo config (demo keys, do not expose)';
  const workers = resolved.workers > 1 ? `; ${resolved.workers} workers` : '';
  return `petstore: ${config}; ${petsPlace(resolved)}; ${limitsPlace(resolved)}${workers}`;
}
