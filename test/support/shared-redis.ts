// One Redis for the tests of a describe block, with an ioredis connection to look at and change
// what the limiter keeps: started before the first test, stopped after the last, pass or fail.
import { after, before } from 'node:test';
import { Redis } from 'ioredis';
import { startRedis, type RedisOptions, type RedisServer } from './redis.js';

export interface SharedRedis {
  readonly redis: RedisServer;
  /** A plain ioredis connection; it reconnects every 50 ms while a test has Redis stopped. */
  readonly admin: Redis;
}

/**
 * Call inside `describe`: `ready` receives the server and the admin connection once they are up
 * (assign them to the block's own variables). Both go when the block ends.
 */
export function shareRedis(ready: (shared: SharedRedis) => void, opts: Omit<RedisOptions, 't'> = {}): void {
  let redis: RedisServer | undefined;
  let admin: Redis | undefined;
  before(async () => {
    redis = await startRedis(opts);
    admin = new Redis(redis.url, { retryStrategy: () => 50 });
    // Tests stop and pause Redis on purpose; the admin connection's errors are expected then.
    admin.on('error', () => undefined);
    ready({ redis, admin });
  });
  after(async () => {
    admin?.disconnect();
    await redis?.close();
  });
}
