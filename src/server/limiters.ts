// The two limiters of a server (keys, and the keyless budget per client address): in process
// by default, or in Redis when a limits URL is given (CONTRACT section 9), both on one
// connection with their own key prefixes.
import type { Config } from '../config/index.js';
import type { Clock, Logger } from '../core/index.js';
import type { StoreGeneration } from '../core/index.js';
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

/**
 * `generation`: given when the store caches reads; it learns the store generation from every
 * limiter reply and advances it through the same connection.
 */
export async function openLimiters(
  url: string | undefined, config: Config, clock: Clock, logger: Logger, generation?: StoreGeneration,
): Promise<Limiters> {
  if (url === undefined) {
    return {
      keyLimiter: new MemoryLimiter({ clock, ban: config.ban }),
      addressLimiter: new MemoryLimiter({ clock, ban: config.ban, maxEntries: config.anonymousTableSize }),
      link: undefined,
    };
  }
  const link = await openRedisLink(url, { logger });
  logger.log('info', 'limits in Redis', { redis: redisWhere(url), up: link.up });
  const shared = generation === undefined ? undefined : { key: STORE_GENERATION_KEY, gate: generation };
  generation?.setAdvance(() => link.advanceGeneration(STORE_GENERATION_KEY));
  return {
    keyLimiter: new RedisLimiter(link, { prefix: REDIS_PREFIXES.keys, clock, ban: config.ban, generation: shared }),
    addressLimiter: new RedisLimiter(link, {
      prefix: REDIS_PREFIXES.addresses, clock, ban: config.ban, maxEntries: config.anonymousTableSize, generation: shared,
    }),
    link,
  };
}
