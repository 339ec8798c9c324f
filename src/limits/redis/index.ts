// The Redis limiter's face: open a link (one connection per process) and limiters on it.
export { RedisLimiter } from './limiter.js';
export type { RedisLimiterOptions } from './limiter.js';
export { RedisLink } from './link.js';
export { RedisStartError, openRedisLimiter, openRedisLink, redisWhere } from './open.js';
export type { RedisLimiterOpenOptions, RedisLinkOpenOptions } from './open.js';
