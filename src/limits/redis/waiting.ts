// The bound on what waits on Redis. Every request a limiter sends to Redis waits for its reply
// (in the link's queue, then in a pipeline in flight), and a process taking requests faster than
// Redis answers them would hold ever more of them. The service's connection layer bounds what it
// hands over (at most about 1,024 requests handled and unanswered over all connections, besides
// 4 per connection: http/connection/turns.ts), so it never gets near this bound; an embedder
// calling take() in a loop of its own could, and past it a request is limited by the process
// alone (the limiter's fallback, which starts from what Redis last said of each id and keeps
// its bans), as while Redis is away, without taking Redis for down.
import type { Logger } from '../../core/index.js';

/** Requests waiting on Redis over the limiters of one link (queued or sent), past which more are answered by the fallback. */
export const MAX_WAITING_TAKES = 65_536;

export class WaitingTakes {
  readonly #logger: Logger;
  readonly #where: string;
  #count = 0;
  /** MAX_WAITING_TAKES was reached and logged, until the count falls to half of it. */
  #overflowing = false;

  constructor(logger: Logger, where: string) {
    this.#logger = logger;
    this.#where = where;
  }

  /** Requests waiting on Redis now. */
  get count(): number {
    return this.#count;
  }

  /** One more request would wait on Redis: counted (true), unless the bound is reached (false, logged once). */
  admit(): boolean {
    if (this.#count < MAX_WAITING_TAKES) {
      this.#count++;
      return true;
    }
    if (!this.#overflowing) {
      this.#overflowing = true;
      this.#logger.log('warn', 'limits: too many requests wait on Redis; more are limited by this process alone until fewer wait', {
        redis: this.#where, waiting: this.#count,
      });
    }
    return false;
  }

  /** `n` admitted requests are answered (by Redis or by the fallback). */
  release(n: number): void {
    this.#count -= n;
    if (this.#overflowing && this.#count <= MAX_WAITING_TAKES >> 1) this.#overflowing = false;
  }
}
