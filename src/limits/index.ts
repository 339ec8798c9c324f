// The limits' face: the limiter contract, the in-memory limiter, and the header names.
export type { BanPolicy, LimitOutcome, LimitResult, Limiter } from './contract.js';
export { checkConfiguration } from './buckets.js';
export { RATE_LIMIT_HEADERS, writeLimitHeaders } from './headers.js';
export { MemoryLimiter } from './memory.js';
export type { LimiterOptions } from './memory.js';
export { RedisLimiter, RedisStartError, openRedisLimiter, openRedisLink, redisWhere } from './redis/index.js';
export type { RedisLimiterOptions, RedisLink } from './redis/index.js';
export type { LimiterSnapshot } from './state.js';
