// Opening the Redis limits: load the driver (ioredis, an optional peer dependency, imported
// only here and only when a limits URL is given), connect (one Redis, over TLS or not, or the
// master Sentinel names), and check at start that the server runs our script, so that a Redis
// set-up that cannot work is one clear start error rather than a failure per request.
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { parseLimitsUrl, type LimitsTarget } from '../../config/limits-url.js';
import type { Clock, Logger } from '../../core/index.js';
import type { BanPolicy } from '../contract.js';
import { RedisLink, SCRIPT_SHA, type RedisClient } from './link.js';
import { RedisLimiter } from './limiter.js';
import { PROBE, TAKE_SCRIPT } from './script.js';
import { CLUSTER_REFUSAL, isReply, reasonOf, startRefusal } from './start-checks.js';

/** A start failure with one line for the operator (missing driver, refused script, bad URL). */
export class RedisStartError extends Error {}

export interface RedisLinkOpenOptions {
  readonly logger: Logger;
  /** Redis silent this many ms while it owes answers: it is down, the fallback answers (default 250). */
  readonly commandTimeoutMs?: number;
  /** How long the start waits for Redis before starting in fallback (default 2000). */
  readonly connectTimeoutMs?: number;
  /** ms between probes while Redis does not answer (default 1000). */
  readonly probeEveryMs?: number;
  /** The throwaway key the start's run of the script charges (default petstore:limits:start-probe). */
  readonly probeKey?: string;
  /** The store generation's key, when the link will track it: the start's run reads it too. */
  readonly generationKey?: string;
}

/** The URL as logs may show it: no user name, no password, no query. */
export function redisWhere(url: string): string {
  const m = /^([a-z][a-z0-9+.-]*):\/\/(?:[^@/?#]*@)?([^/?#]*)(\/[^?#]*)?/i.exec(url);
  return m === null || m[2] === '' ? '(unparseable URL)' : `${(m[1] as string).toLowerCase()}://${m[2]}${m[3] ?? ''}`;
}

type RedisInstance = RedisClient & {
  connect(): Promise<void>;
  select(db: number): Promise<unknown>;
  info(section: string): Promise<string>;
  pexpire(key: string, ms: number): Promise<unknown>;
  config(op: 'GET', name: string): Promise<unknown>;
  on(event: 'error', fn: (err: Error) => void): unknown;
};
type RedisConstructor = new (options: Record<string, unknown>) => RedisInstance;

async function loadDriver(): Promise<RedisConstructor> {
  let mod: { default: unknown };
  try {
    // External in build.mjs: resolved from the installation's node_modules at run time.
    mod = (await import('ioredis')) as { default: unknown };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') {
      throw new RedisStartError('the limits URL needs the Redis driver ioredis, which is not installed: run `npm install ioredis`');
    }
    throw err;
  }
  return mod.default as RedisConstructor;
}

function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer in ${ms} ms`)), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

/** The TLS options of a rediss URL: its files read now, so that a missing one stops the start. */
function tlsOptions(target: LimitsTarget, host: string, where: string): Record<string, unknown> {
  const read = (what: string, file: string | undefined): Buffer | undefined => {
    if (file === undefined) return undefined;
    try {
      return readFileSync(file);
    } catch (err) {
      throw new RedisStartError(`the limits URL ${where}: cannot read its ${what} file ${file} (${reasonOf(err)})`);
    }
  };
  const ca = read('ca', target.ca);
  const cert = read('cert', target.cert);
  const key = read('key', target.key);
  return {
    // (A server name is a host name: node refuses to send an IP address as one.)
    ...(isIP(host) === 0 ? { servername: host } : {}),
    ...(ca === undefined ? {} : { ca }),
    ...(cert === undefined ? {} : { cert }),
    ...(key === undefined ? {} : { key }),
  };
}

/** The driver's options for `target` (one Redis, or Sentinel). */
function driverOptions(target: LimitsTarget, where: string, connectTimeoutMs: number): Record<string, unknown> {
  const common = {
    username: target.username,
    password: target.password,
    db: target.db,
    lazyConnect: true,
    // The traps (link.ts): no queue while disconnected and no retry of a failed command. The
    // link times commands itself (a timer here would fire on answers already in the socket
    // whenever our own event loop stalls).
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    // Its INFO would print to the console when the user may not run INFO (an ACL without it).
    enableReadyCheck: false,
    connectTimeout: connectTimeoutMs,
    retryStrategy: (times: number) => Math.min(50 * 2 ** times, 1000),
    // A master turned replica (a failover) refuses writes: reconnect, and find the master again.
    reconnectOnError: (err: Error) => (/^READONLY\b/.test(err.message) ? 1 : false),
  };
  if (target.sentinels === undefined) {
    return { ...common, host: target.host, port: target.port, ...(target.tls ? { tls: tlsOptions(target, target.host, where) } : {}) };
  }
  const tls = target.tls ? tlsOptions(target, '', where) : undefined;
  return {
    ...common,
    sentinels: target.sentinels.map((s) => ({ host: s.host, port: s.port })),
    name: target.masterName,
    role: 'master',
    sentinelPassword: target.sentinelPassword,
    ...(tls === undefined ? {} : { tls, enableTLSForSentinelMode: true, sentinelTLS: tls }),
    sentinelRetryStrategy: (times: number) => Math.min(50 * 2 ** times, 1000),
    // Told of a failover by the sentinels, not only by a refused write.
    failoverDetector: true,
  };
}

/** Whether the host and port of `target` answer over the other protocol than the URL's. */
async function otherProtocolAnswers(Redis: RedisConstructor, target: LimitsTarget, timeoutMs: number): Promise<boolean> {
  const other = new Redis({
    host: target.host, port: target.port, lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0,
    enableReadyCheck: false, connectTimeout: timeoutMs, retryStrategy: () => null,
    ...(target.tls ? {} : { tls: { rejectUnauthorized: false } }),
  });
  let replied = false;
  other.on('error', (err) => {
    // A refused password is an answer too: it speaks Redis.
    if (isReply(err)) replied = true;
  });
  try {
    await within(other.connect(), timeoutMs, 'connect');
    return true;
  } catch {
    return replied;
  } finally {
    other.disconnect();
  }
}

/** ARGV[1] of the start's run of the take script: limits 1/1, no ban, n = 0 (charges nothing). */
const START_RUN = '1 1 -1 0 0 0';

/**
 * Connects to `url` and checks that it can work: the credentials are accepted, the database
 * exists, it is not a cluster, and the server runs the script the way every request will, on a
 * throwaway key (so a user that may not run one of its commands, or touch its keys, is found
 * now). Redis unreachable at start: the link starts down (one error line, with the driver's
 * reason) and comes up by itself, so a deploy during an outage still starts. A set-up that
 * cannot work (start-checks.ts): RedisStartError naming the limits URL and the real reason,
 * since running on per-process limits for good would be a silent failure.
 */
export async function openRedisLink(url: string, opts: RedisLinkOpenOptions): Promise<RedisLink> {
  const where = redisWhere(url);
  const target = parseLimitsUrl(url);
  if (typeof target === 'string') throw new RedisStartError(`the limits URL ${target}`);
  const Redis = await loadDriver();
  const connectTimeoutMs = opts.connectTimeoutMs ?? 2000;
  const client = new Redis(driverOptions(target, where, connectTimeoutMs));
  // ioredis emits 'error' on every failed reconnect; the link logs changes, not attempts. The
  // last one says why a connect failed (a refused password or certificate comes only this way).
  let lastError: Error | undefined;
  client.on('error', (err) => {
    lastError = err;
  });
  const refuse = (why: string): never => {
    client.disconnect();
    throw new RedisStartError(`the limits URL ${where}: ${why}`);
  };
  let up = true;
  try {
    try {
      await within(client.connect(), connectTimeoutMs, 'connect');
    } catch (err) {
      // ioredis rejects with "Connection is closed."; the reason came as an 'error' event.
      throw lastError ?? err;
    }
    // A cluster node answers keys of its own slots only: refused, when INFO may say so.
    const info = await client.info('server').catch(() => '');
    if (/^redis_mode:cluster\b/m.test(info)) refuse(CLUSTER_REFUSAL);
    // ioredis selects the database on connect, but only logs a refusal and stays on 0: ask
    // again, so that a database this Redis does not have stops the start.
    if (target.db !== 0) {
      await client.select(target.db).catch((err: unknown) => {
        if (!isReply(err) || /^(LOADING|BUSY|MASTERDOWN|TRYAGAIN|READONLY)\b/.test(err.message)) throw err;
        return client.config('GET', 'databases').then(
          (reply) => refuse(`Redis has no database ${target.db} (it has ${Array.isArray(reply) ? String(reply[1]) : 'fewer'}: 0 and up; see its "databases" setting)`),
          () => refuse(`Redis has no database ${target.db} (${err instanceof Error ? err.message : String(err)})`),
        );
      });
    }
    // Loads the script (EVAL caches it), then runs it the way every request will (EVALSHA), on
    // a throwaway key that expires at once (and the store generation's key, when asked).
    await client.eval(TAKE_SCRIPT, 0, PROBE);
    const probeKey = opts.probeKey ?? 'petstore:limits:start-probe';
    if (opts.generationKey === undefined) await client.evalsha(SCRIPT_SHA, 1, probeKey, START_RUN);
    else await client.evalsha(SCRIPT_SHA, 2, probeKey, opts.generationKey, START_RUN);
  } catch (err) {
    if (err instanceof RedisStartError) throw err;
    const why = await startRefusal(err, {
      where,
      tls: target.tls,
      passwordGiven: target.password !== undefined,
      sentinel: target.sentinels !== undefined,
      otherProtocolAnswers: () => otherProtocolAnswers(Redis, target, Math.min(connectTimeoutMs, 1000)),
    });
    if (why !== undefined) {
      client.disconnect();
      throw new RedisStartError(why);
    }
    up = false;
    opts.logger.log('error', 'limits: Redis does not answer at start; each process limits on its own until it does', {
      redis: where, error: reasonOf(err),
    });
  }
  return new RedisLink(client, {
    logger: opts.logger, where, up, probeEveryMs: opts.probeEveryMs, commandTimeoutMs: opts.commandTimeoutMs,
    lastError: () => lastError,
  });
}

export interface RedisLimiterOpenOptions extends RedisLinkOpenOptions {
  readonly prefix: string;
  readonly clock: Clock;
  readonly ban: BanPolicy;
  readonly maxEntries?: number;
  /** See RedisLimiterOptions.outage. */
  readonly outage?: 'open' | 'strict';
  /** FOR TESTS ONLY: see RedisLimiterOptions.testTime. */
  readonly testTime?: () => number;
  /** See RedisLimiterOptions.clockOffsetMs. */
  readonly clockOffsetMs?: () => number;
}

/** One limiter on a connection of its own (closed with it). */
export async function openRedisLimiter(url: string, opts: RedisLimiterOpenOptions): Promise<RedisLimiter> {
  const link = await openRedisLink(url, opts);
  return new RedisLimiter(link, { ...opts, ownsLink: true });
}
