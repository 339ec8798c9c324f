// Validating a config: keys, plans and server settings. Every problem is listed at once with
// the source named, then the result is frozen. Keys are held only as SHA-256 digests.
import { resolve } from 'node:path';
import {
  DEFAULT_IDEMPOTENCY_RETENTION_HOURS, DEFAULT_MAX_QUEUED_WRITES, MAX_BAN_SECONDS, MAX_IDEMPOTENCY_RETENTION_HOURS, MAX_LIMIT, MAX_WORKERS,
  type Limits,
} from '../core/index.js';
import type { Config, KeyEntry } from './contract.js';
import { DEFAULT_PLANS } from './defaults.js';
import { CONFIG_FIELDS } from './fields.js';
import { keyDigest } from './digest.js';
import { keyNameProblem } from './key-name.js';
import { ConfigError } from './errors.js';
import { limitsUrlProblem } from './limits-url.js';
import { percentEncodingProblem } from './url-encoding.js';

const TOP_LEVEL: ReadonlySet<string> = new Set(Object.keys(CONFIG_FIELDS));
const KEY_FIELDS = new Set(['key', 'sha256', 'plan', 'name', 'limits']);
const LOG_LEVELS = ['debug', 'info', 'warn', 'error', 'silent'] as const;
// RFC 6750 section 2.1: a bearer token is a token68.
const TOKEN68 = /^[A-Za-z0-9\-._~+/]+=*$/;
const MIN_ADMIN_KEY_LENGTH = 16;

type Raw = Record<string, unknown>;

function isObject(v: unknown): v is Raw {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Collects problems while reading fields, so that every one is reported at once. */
class Reader {
  readonly problems: string[] = [];
  problem(msg: string): void {
    this.problems.push(msg);
  }
  positiveInt(v: unknown, where: string): number | undefined {
    if (typeof v === 'number' && Number.isSafeInteger(v) && v > 0) return v;
    this.problem(`${where} must be a positive integer, got ${JSON.stringify(v) ?? 'nothing'}`);
    return undefined;
  }
  limits(v: unknown, where: string): Limits | undefined {
    if (!isObject(v)) {
      this.problem(`${where} must be an object {"perMinute": N, "perDay": N}`);
      return undefined;
    }
    for (const k of Object.keys(v)) if (k !== 'perMinute' && k !== 'perDay') this.problem(`${where}.${k} is not a known field`);
    const perMinute = this.limit(v.perMinute, `${where}.perMinute`);
    const perDay = this.limit(v.perDay, `${where}.perDay`);
    return perMinute !== undefined && perDay !== undefined ? { perMinute, perDay } : undefined;
  }
  /** A rate (requests per minute or per day): bounded so the limiter's arithmetic holds. */
  limit(v: unknown, where: string): number | undefined {
    if (typeof v === 'number' && Number.isInteger(v) && v > 0 && v <= MAX_LIMIT) return v;
    this.problem(`${where} must be a positive integer no larger than ${MAX_LIMIT}, got ${JSON.stringify(v) ?? 'nothing'}`);
    return undefined;
  }
  string(v: unknown, where: string): string | undefined {
    if (typeof v === 'string' && v !== '') return v;
    this.problem(`${where} must be a non-empty string`);
    return undefined;
  }
}

/**
 * Validate a parsed config. `source` names it in messages; `baseDir` anchors a relative
 * dataFile (the config file's own directory, so a service's cwd does not matter).
 */
export function parseConfig(raw: unknown, source: string, baseDir: string): Config {
  const r = new Reader();
  if (!isObject(raw)) throw new ConfigError(source, ['the config must be a JSON object']);
  for (const k of Object.keys(raw)) if (!TOP_LEVEL.has(k)) r.problem(`unknown top-level field "${k}"`);

  const host = raw.host === undefined ? '127.0.0.1' : r.string(raw.host, 'host');
  let port = 8080;
  if (raw.port !== undefined) {
    if (typeof raw.port === 'number' && Number.isInteger(raw.port) && raw.port >= 0 && raw.port <= 65535) port = raw.port;
    else r.problem('port must be an integer from 0 to 65535');
  }
  let dataFile: string | undefined;
  if (raw.dataFile !== undefined && raw.dataFile !== null) {
    const f = r.string(raw.dataFile, 'dataFile');
    if (f !== undefined) dataFile = resolve(baseDir, f);
  }
  const store = readStore(r, raw.store, dataFile);
  const environments = readEnvironments(r, raw.environments);
  const limits = raw.limits === undefined || raw.limits === null ? undefined : r.string(raw.limits, 'limits');
  // A bad percent-encoding is named by its part (user name, password, database) first.
  const limitsEncoding = limits === undefined ? undefined : percentEncodingProblem(limits, '"limits"');
  const limitsProblem = limits === undefined || limitsEncoding !== undefined ? undefined : limitsUrlProblem(limits);
  if (limitsEncoding !== undefined) r.problem(limitsEncoding);
  else if (limitsProblem !== undefined) r.problem(`limits ${limitsProblem}`);
  let limitsOutage: Config['limitsOutage'] = 'open';
  if (raw.limitsOutage !== undefined && raw.limitsOutage !== null) {
    if (raw.limitsOutage === 'open' || raw.limitsOutage === 'strict') limitsOutage = raw.limitsOutage;
    else r.problem('limitsOutage must be "open" or "strict"');
  }
  const workers = readWorkers(r, raw.workers);
  let limitsFile: string | undefined;
  if (raw.limitsFile !== undefined && raw.limitsFile !== null) {
    const f = r.string(raw.limitsFile, 'limitsFile');
    if (f !== undefined) limitsFile = resolve(baseDir, f);
    if (limits !== undefined) r.problem('limitsFile and limits cannot both be given: the limits live in Redis or in a file');
  }
  const { plans, invalid: invalidPlans } = readPlans(r, raw.plans);
  const keys = readKeys(r, raw.keys, plans, invalidPlans);
  const ban = readBan(r, raw.ban);
  const anonymous = raw.anonymous === undefined ? { perMinute: 30, perDay: 500 } : r.limits(raw.anonymous, 'anonymous');
  const anonymousTableSize = raw.anonymousTableSize === undefined ? 100_000 : r.positiveInt(raw.anonymousTableSize, 'anonymousTableSize');
  const maxBodyBytes = raw.maxBodyBytes === undefined ? 64 * 1024 : r.positiveInt(raw.maxBodyBytes, 'maxBodyBytes');
  const maxQueuedWrites = raw.maxQueuedWrites === undefined ? DEFAULT_MAX_QUEUED_WRITES : r.positiveInt(raw.maxQueuedWrites, 'maxQueuedWrites');
  let trustProxy = false;
  if (raw.trustProxy !== undefined) {
    if (typeof raw.trustProxy === 'boolean') trustProxy = raw.trustProxy;
    else r.problem('trustProxy must be true or false');
  }
  const cors = readCors(r, raw.cors);
  const idempotencyRetentionHours = readRetention(r, raw.idempotencyRetentionHours);
  let metrics = false;
  if (raw.metrics !== undefined) {
    if (typeof raw.metrics === 'boolean') metrics = raw.metrics;
    else r.problem('metrics must be true or false');
  }
  const admin = readAdmin(r, raw.admin, keys);
  const connections = readConnectionBounds(r, raw);
  let logLevel: Config['logLevel'] = 'info';
  if (raw.logLevel !== undefined) {
    if ((LOG_LEVELS as readonly unknown[]).includes(raw.logLevel)) logLevel = raw.logLevel as Config['logLevel'];
    else r.problem(`logLevel must be one of ${LOG_LEVELS.join(', ')}`);
  }

  if (r.problems.length > 0 || host === undefined || anonymous === undefined || maxBodyBytes === undefined || anonymousTableSize === undefined) {
    throw new ConfigError(source, r.problems);
  }
  return Object.freeze({
    host, port, dataFile, store, environments, plans, keys, ban, anonymous, anonymousTableSize, maxBodyBytes, trustProxy, cors, logLevel,
    ...connections, metrics, admin,
    maxQueuedWrites: maxQueuedWrites ?? DEFAULT_MAX_QUEUED_WRITES,
    idempotencyRetentionHours,
    limits, limitsOutage, workers, limitsFile,
  });
}

/** A store URL and a data file answer one question (where pets live); one config gives one answer. */
function readStore(r: Reader, v: unknown, dataFile: string | undefined): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string' || !/^postgres(?:ql)?:\/\/./i.test(v)) {
    r.problem('store must be a PostgreSQL URL, "postgres://user:password@host:5432/database"');
    return undefined;
  }
  if (dataFile !== undefined) r.problem('store and dataFile cannot both be given: pets live in PostgreSQL or in a data file');
  return v;
}

/** Processes sharing the port: 1 (the default) to MAX_WORKERS. */
function readWorkers(r: Reader, v: unknown): number {
  if (v === undefined) return 1;
  if (typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= MAX_WORKERS) return v;
  r.problem(`workers must be an integer from 1 to ${MAX_WORKERS}, got ${JSON.stringify(v) ?? 'nothing'}`);
  return 1;
}

/** Hours an Idempotency-Key is remembered: a whole number from 1 to a year. */
function readRetention(r: Reader, v: unknown): number {
  if (v === undefined) return DEFAULT_IDEMPOTENCY_RETENTION_HOURS;
  if (typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= MAX_IDEMPOTENCY_RETENTION_HOURS) return v;
  r.problem(`idempotencyRetentionHours must be an integer from 1 to ${MAX_IDEMPOTENCY_RETENTION_HOURS}, got ${JSON.stringify(v) ?? 'nothing'}`);
  return DEFAULT_IDEMPOTENCY_RETENTION_HOURS;
}

function readEnvironments(r: Reader, v: unknown): Config['environments'] {
  const out = { production: 'https://api.example.com/v1', staging: 'https://staging-api.example.com/v1' };
  if (v === undefined) return out;
  if (!isObject(v)) {
    r.problem('environments must be an object {"production": URL, "staging": URL}');
    return out;
  }
  for (const [name, url] of Object.entries(v)) {
    if (name !== 'production' && name !== 'staging') {
      r.problem(`environments.${name} is not a known environment (production, staging)`);
    } else if (!isBaseUrl(url)) {
      r.problem(`environments.${name} must be an http(s) URL ending in /v1, absolute and in ASCII ` +
        '(an international domain name in its xn-- form, other characters percent-encoded)');
    } else {
      out[name] = url;
    }
  }
  return Object.freeze(out);
}

// RFC 3986: scheme, authority (userinfo, host, port), path; no query or fragment before /v1.
// ASCII only, and none of < > " or spaces: the URL goes into Link and Location header values,
// which node refuses (throws) outside Latin-1, and into the <...> of a Link.
const BASE_URL = /^https?:\/\/[A-Za-z0-9\-._~!$&'()*+,;=:@%[\]]+(?:\/[A-Za-z0-9\-._~!$&'()*+,;=:@%]*)*\/v1$/;

function isBaseUrl(url: unknown): url is string {
  if (typeof url !== 'string' || !BASE_URL.test(url)) return false;
  try {
    return new URL(url).hostname !== ''; // a valid host: no "https://[zz]/v1" or "http://a:b:c/v1"
  } catch {
    return false;
  }
}

function readConnectionBounds(r: Reader, raw: Raw): Pick<Config, 'maxConnections' | 'maxPendingBodyBytes'> {
  const maxConnections = raw.maxConnections === undefined ? 10_000 : (r.positiveInt(raw.maxConnections, 'maxConnections') ?? 10_000);
  const maxPendingBodyBytes = raw.maxPendingBodyBytes === undefined
    ? 32 * 1024 * 1024
    : r.positiveInt(raw.maxPendingBodyBytes, 'maxPendingBodyBytes') ?? 32 * 1024 * 1024;
  // Below one body of the largest size, such a body could never be received (a 503 "retry
  // later" that no retry can change): checked against the default of either too.
  const maxBody = typeof raw.maxBodyBytes === 'number' ? raw.maxBodyBytes : 64 * 1024;
  if (maxPendingBodyBytes < maxBody) {
    const pending = raw.maxPendingBodyBytes === undefined ? `the default maxPendingBodyBytes (${maxPendingBodyBytes})` : `maxPendingBodyBytes (${maxPendingBodyBytes})`;
    r.problem(`${pending} must be at least maxBodyBytes (${maxBody})`);
  }
  return { maxConnections, maxPendingBodyBytes };
}

/**
 * The plans: the default ones (free, pro, business), each replaced by the config's plan of the
 * same name, and the config's other plans beside them. A plan given but not valid is reported
 * (plans.NAME ...) and is in `invalid`, so that a key naming it is not also told the plan is
 * unknown.
 */
function readPlans(r: Reader, v: unknown): { plans: ReadonlyMap<string, Limits>; invalid: ReadonlySet<string> } {
  const invalid = new Set<string>();
  if (v === undefined) return { plans: DEFAULT_PLANS, invalid };
  if (!isObject(v)) {
    r.problem('plans must be an object of plan name to {"perMinute", "perDay"}');
    return { plans: new Map(), invalid };
  }
  // A Map, not an object: a plan named "toString" or "__proto__" must be one the config
  // defines, never something inherited from Object.prototype.
  const plans = new Map<string, Limits>(DEFAULT_PLANS);
  for (const [name, limits] of Object.entries(v)) {
    const l = r.limits(limits, `plans.${name}`);
    if (l) plans.set(name, Object.freeze(l));
    else {
      plans.delete(name);
      invalid.add(name);
    }
  }
  return { plans, invalid };
}

function readKeys(r: Reader, v: unknown, plans: ReadonlyMap<string, Limits>, invalidPlans: ReadonlySet<string>): Map<string, KeyEntry> {
  const keys = new Map<string, KeyEntry>();
  if (v === undefined) return keys;
  if (!Array.isArray(v)) {
    r.problem('keys must be an array');
    return keys;
  }
  const seen = new Map<string, string>();
  const names = new Map<string, string>();
  v.forEach((item: unknown, i) => {
    const where = `keys[${i}]`;
    if (!isObject(item)) {
      r.problem(`${where} must be an object`);
      return;
    }
    for (const k of Object.keys(item)) if (!KEY_FIELDS.has(k)) r.problem(`${where}.${k} is not a known field`);
    const digest = readKeyDigest(r, item, where);
    const name = item.name === undefined ? `key #${i + 1}` : readKeyName(r, item.name, `${where}.name`);
    if (name !== undefined) {
      // Names pick a key out in logs and in `keys revoke NAME`: one name, one key.
      const first = names.get(name);
      if (first !== undefined) r.problem(`${where}.name ${JSON.stringify(name)} is already the name of ${first}: names must be unique`);
      else names.set(name, where);
    }
    if (digest !== undefined) {
      const first = seen.get(digest);
      if (first !== undefined) r.problem(`${where} is the same key as ${first}: duplicate keys are not allowed`);
      else seen.set(digest, where);
    }
    const plan = r.string(item.plan, `${where}.plan`);
    let limits: Limits | undefined;
    const planLimits = plan === undefined ? undefined : plans.get(plan);
    // A plan the config gives but gets wrong is already reported as such (plans.NAME ...).
    const unknown = plan !== undefined && plan !== 'enterprise' && planLimits === undefined && !invalidPlans.has(plan);
    const unknownText = `${where}.plan "${plan}" is not a known plan (${[...plans.keys(), 'enterprise'].join(', ')})`;
    if (item.limits !== undefined) limits = r.limits(item.limits, `${where}.limits`);
    else if (planLimits !== undefined) limits = planLimits;
    else if (plan === 'enterprise') r.problem(`${where}: plan "enterprise" is custom, so the key needs its own "limits"`);
    if (unknown) r.problem(unknownText);
    if (digest === undefined || name === undefined || plan === undefined || limits === undefined || keys.has(digest)) return;
    keys.set(digest, Object.freeze({ digest, name, plan, limits }));
  });
  return keys;
}

/** A name given in the config: printable (key-name.ts), since it is printed. */
function readKeyName(r: Reader, v: unknown, where: string): string | undefined {
  if (typeof v !== 'string') return r.string(v, where);
  const problem = keyNameProblem(v);
  if (problem === undefined) return v;
  r.problem(`${where} ${problem}`);
  return undefined;
}

function readKeyDigest(r: Reader, item: Raw, where: string): string | undefined {
  const hasKey = item.key !== undefined;
  const hasDigest = item.sha256 !== undefined;
  if (hasKey === hasDigest) {
    r.problem(`${where} needs exactly one of "key" (the key in clear) or "sha256" (its hex SHA-256 digest)`);
    return undefined;
  }
  if (hasKey) {
    // Never echo the key itself in a message: it is a secret.
    if (typeof item.key !== 'string' || !TOKEN68.test(item.key)) {
      r.problem(`${where}.key must be a non-empty string of token characters (A-Z a-z 0-9 - . _ ~ + /)`);
      return undefined;
    }
    return keyDigest(item.key);
  }
  if (typeof item.sha256 !== 'string' || !/^[0-9a-fA-F]{64}$/.test(item.sha256)) {
    r.problem(`${where}.sha256 must be 64 hexadecimal characters`);
    return undefined;
  }
  return item.sha256.toLowerCase();
}

/** The admin key of /__admin (test harnesses): given like an API key, and none of them. */
function readAdmin(r: Reader, v: unknown, keys: ReadonlyMap<string, KeyEntry>): Config['admin'] {
  if (v === undefined) return undefined;
  if (!isObject(v)) {
    r.problem('admin must be an object {"sha256": "<hex digest>"} or {"key": "<key>"}');
    return undefined;
  }
  for (const k of Object.keys(v)) if (k !== 'key' && k !== 'sha256' && k !== 'journal' && k !== 'namespaces') r.problem(`admin.${k} is not a known field`);
  const journal = v.journal === undefined ? DEFAULT_ADMIN_JOURNAL : v.journal;
  if (typeof journal !== 'number' || !Number.isInteger(journal) || journal < 0 || journal > MAX_ADMIN_JOURNAL) {
    r.problem(`admin.journal must be an integer from 0 (no request journal) to ${MAX_ADMIN_JOURNAL} (entries kept)`);
  }
  const namespaces = v.namespaces === undefined ? 0 : v.namespaces;
  if (typeof namespaces !== 'number' || !Number.isInteger(namespaces) || namespaces < 0 || namespaces > MAX_ADMIN_NAMESPACES) {
    r.problem(`admin.namespaces must be an integer from 0 (no namespaces) to ${MAX_ADMIN_NAMESPACES}`);
  }
  // The admin key empties the store: a short one is guessed from enough addresses, whatever
  // the per-address budget of 401s. (A digest's key cannot be measured.)
  if (typeof v.key === 'string' && TOKEN68.test(v.key) && v.key.length < MIN_ADMIN_KEY_LENGTH) {
    r.problem(`admin.key must be at least ${MIN_ADMIN_KEY_LENGTH} characters long (it has ${v.key.length}); make one with: openssl rand -hex 16`);
  }
  const digest = readKeyDigest(r, v, 'admin');
  if (digest === undefined) return undefined;
  const same = keys.get(digest);
  if (same !== undefined) r.problem(`admin is the same key as the API key named ${JSON.stringify(same.name)}: the admin key must be a key of its own`);
  return Object.freeze({ digest, journal: journal as number, namespaces: namespaces as number });
}

/** Namespaces (/ns/{name}) there may be at once, at most. */
const MAX_ADMIN_NAMESPACES = 10_000;

/** Requests the admin journal keeps by default, and at most. */
export const DEFAULT_ADMIN_JOURNAL = 1000;
export const MAX_ADMIN_JOURNAL = 100_000;

function readBan(r: Reader, v: unknown): Config['ban'] {
  if (v === undefined) return { after: 20, seconds: 300 };
  if (!isObject(v)) {
    r.problem('ban must be an object {"after": N, "seconds": N}');
    return { after: 20, seconds: 300 };
  }
  for (const k of Object.keys(v)) if (k !== 'after' && k !== 'seconds') r.problem(`ban.${k} is not a known field`);
  const after = r.positiveInt(v.after, 'ban.after') ?? 20;
  // 0 is the limiter's "no bans"; the bound keeps Retry-After a plain number of seconds.
  let seconds = 300;
  if (typeof v.seconds === 'number' && Number.isInteger(v.seconds) && v.seconds >= 0 && v.seconds <= MAX_BAN_SECONDS) seconds = v.seconds;
  else r.problem(`ban.seconds must be an integer from 0 (no bans) to ${MAX_BAN_SECONDS}, got ${JSON.stringify(v.seconds) ?? 'nothing'}`);
  return Object.freeze({ after, seconds });
}

function readCors(r: Reader, v: unknown): Config['cors'] {
  if (v === undefined) return { origins: [] };
  if (!isObject(v) || !Array.isArray(v.origins)) {
    r.problem('cors must be an object {"origins": ["https://app.example.com", ...]}');
    return { origins: [] };
  }
  const origins: string[] = [];
  v.origins.forEach((o: unknown, i) => {
    if (typeof o === 'string' && (o === '*' || /^https?:\/\/[^\s/]+$/.test(o))) origins.push(o);
    else r.problem(`cors.origins[${i}] must be "*" or an origin such as "https://app.example.com" (no path)`);
  });
  return Object.freeze({ origins: Object.freeze(origins) });
}
