// Opening the Redis limits: load the driver (ioredis, an optional peer dependency, imported
// only here and only when a limits URL is given), connect, and check at start that the server
// runs our script, so that a Redis that forbids EVALSHA is one clear start error rather than
// a failure per request.
import { parseLimitsUrl } from '../../config/limits-url.js';
import type { Clock, Logger } from '../../core/index.js';
import type { BanPolicy } from '../contract.js';
import { RedisLink, SCRIPT_SHA, type RedisClient } from './link.js';
import { RedisLimiter } from './limiter.js';
import { PROBE, TAKE_SCRIPT } from './script.js';

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
}

/** The URL as logs may show it: no user name, no password. */
export function redisWhere(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return '(unparseable URL)';
  }
}

type RedisConstructor = new (options: Record<string, unknown>) => RedisClient & {
  connect(): Promise<void>;
  select(db: number): Promise<unknown>;
  config(op: 'GET', name: string): Promise<unknown>;
  on(event: 'error', fn: (err: Error) => void): unknown;
};

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

/** A reply from Redis (NOPERM, unknown command, WRONGPASS...) rather than a lost connection. */
function isReply(err: unknown): err is Error {
  return err instanceof Error && (err.name === 'ReplyError' || /^(NOPERM|ERR|WRONGPASS|NOAUTH|WRONGTYPE)\b/.test(err.message));
}

/** A refusal of the credentials, as Redis words it. */
function isAuthRefusal(err: unknown): err is Error {
  return err instanceof Error && /^(WRONGPASS|NOAUTH)\b|AUTH.*(invalid|without any password)|invalid (username|password)/i.test(err.message);
}

function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer in ${ms} ms`)), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

/**
 * Connects to `url` and checks that it can work: the credentials are accepted, the database
 * exists, and the server runs the script. Redis unreachable at start: the link starts down
 * (one error line) and comes up by itself, so a deploy during an outage still starts. Redis
 * answering but refusing any of those: RedisStartError, naming the limits URL, since running
 * on per-process limits for good would be a silent failure.
 */
export async function openRedisLink(url: string, opts: RedisLinkOpenOptions): Promise<RedisLink> {
  const where = redisWhere(url);
  const target = parseLimitsUrl(url);
  if (typeof target === 'string') throw new RedisStartError(`the limits URL ${target}`);
  const Redis = await loadDriver();
  const connectTimeoutMs = opts.connectTimeoutMs ?? 2000;
  const client = new Redis({
    host: target.host,
    port: target.port,
    username: target.username,
    password: target.password,
    db: target.db,
    ...(target.tls ? { tls: { servername: target.host } } : {}),
    lazyConnect: true,
    // The traps (link.ts): no queue while disconnected and no retry of a failed command. The
    // link times commands itself (a timer here would fire on answers already in the socket
    // whenever our own event loop stalls).
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    connectTimeout: connectTimeoutMs,
    retryStrategy: (times: number) => Math.min(50 * 2 ** times, 1000),
  });
  // ioredis emits 'error' on every failed reconnect; the link logs changes, not attempts. The
  // last one says why a connect failed (a refused password comes only this way).
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
      throw isReply(lastError) ? lastError : err;
    }
    // ioredis selects the database on connect, but only logs a refusal and stays on 0: ask
    // again, so that a database this Redis does not have stops the start.
    if (target.db !== 0) {
      await client.select(target.db).catch((err: unknown) => {
        if (!isReply(err)) throw err;
        return client.config('GET', 'databases').then(
          (reply) => refuse(`Redis has no database ${target.db} (it has ${Array.isArray(reply) ? String(reply[1]) : 'fewer'}: 0 and up; see its "databases" setting)`),
          () => refuse(`Redis has no database ${target.db} (${err instanceof Error ? err.message : String(err)})`),
        );
      });
    }
    // Loads the script (EVAL caches it), then runs it the way every request will (EVALSHA).
    await client.eval(TAKE_SCRIPT, 0, PROBE);
    await client.evalsha(SCRIPT_SHA, 0, PROBE);
  } catch (err) {
    if (err instanceof RedisStartError) throw err;
    if (isAuthRefusal(err) && target.password === undefined) {
      refuse(`Redis wants a password, and the URL gives none (${err.message}); give it as in redis://:password@host:6379/0`);
    }
    if (isAuthRefusal(err)) {
      refuse(`Redis refuses the credentials (${err.message}); give the right user and password in the URL, as in redis://user:password@host:6379/0`);
    }
    if (isReply(err)) {
      client.disconnect();
      throw new RedisStartError(
        `Redis at ${where} refuses the limiter's script (${err.message}): the limits need EVAL and EVALSHA ` +
        '(server-side Lua scripts) and valid credentials; allow them for this user, or run without --limits',
      );
    }
    up = false;
    opts.logger.log('error', 'limits: Redis does not answer at start; each process limits on its own until it does', {
      redis: where, error: err instanceof Error ? err.message : String(err),
    });
  }
  return new RedisLink(client, { logger: opts.logger, where, up, probeEveryMs: opts.probeEveryMs, commandTimeoutMs: opts.commandTimeoutMs });
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
