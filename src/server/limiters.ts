// The two limiters of a server (keys, and the keyless budget per client address): in process
// by default, or in Redis when a limits URL is given (docs/scaling.md), both on one
// connection with their own key prefixes.
import type { Config } from '../config/index.js';
import type { Clock, Logger, StoreGeneration } from '../core/index.js';
import { MemoryLimiter, RedisLimiter, openRedisLink, redisWhere, type Limiter, type RedisLink } from '../limits/index.js';

/** Key prefixes in Redis: one per limiter, so that a key digest and an address never meet. */
export const REDIS_PREFIXES = { keys: 'petstore:limits:key:', addresses: 'petstore:limits:address:' } as const;
/** The store generation's key (core/store-generation.ts): outside both prefixes, so a reset of the limits keeps it. */
export const STORE_GENERATION_KEY = 'petstore:store:generation';

export interface Limiters {
  readonly keyLimiter: Limiter;
  readonly addressLimiter: Limiter;
  /** The Redis connection both share, closed after them; undefined in process. */
  readonly link: RedisLink | undefined;
}

export interface LimitersOptions {
  /** Added to the Redis script's time at every run (the harness's clock offset); default 0. */
  readonly clockOffsetMs?: () => number;
  /**
   * Given when the store caches reads: it learns the store generation from every limiter
   * reply and is advanced through the same connection (limits/redis/link.ts).
   */
  readonly generation?: StoreGeneration;
}

/** The two limiters in this process (also each namespace's, on its own clock). */
export function memoryLimiters(config: Config, clock: Clock): { keyLimiter: MemoryLimiter; addressLimiter: MemoryLimiter } {
  return {
    keyLimiter: new MemoryLimiter({ clock, ban: config.ban }),
    addressLimiter: new MemoryLimiter({ clock, ban: config.ban, maxEntries: config.anonymousTableSize }),
  };
}

export async function openLimiters(url: string | undefined, config: Config, clock: Clock, logger: Logger, opts: LimitersOptions = {}): Promise<Limiters> {
  if (url === undefined) return { ...memoryLimiters(config, clock), link: undefined };
  const link = await openRedisLink(url, { logger });
  logger.log('info', 'limits in Redis', { redis: redisWhere(url), up: link.up });
  const generation = opts.generation;
  if (generation !== undefined) {
    link.trackGeneration(generation, STORE_GENERATION_KEY);
    generation.setAdvance(() => link.advanceGeneration());
  }
  return {
    keyLimiter: new RedisLimiter(link, { prefix: REDIS_PREFIXES.keys, clock, ban: config.ban, clockOffsetMs: opts.clockOffsetMs, outage: config.limitsOutage }),
    addressLimiter: new RedisLimiter(link, {
      prefix: REDIS_PREFIXES.addresses, clock, ban: config.ban, maxEntries: config.anonymousTableSize, clockOffsetMs: opts.clockOffsetMs,
      outage: config.limitsOutage,
    }),
    link,
  };
}
