// The Redis limiter: the same two buckets and ban as MemoryLimiter, kept in Redis so that every
// process charges the same state. One script run per request (script.ts); the headers come
// from its reply through the memory limiter's own limitResult(), so they cannot differ.
//
// While Redis does not answer, the link is down and take() answers from an in-process
// MemoryLimiter at once (limits are then per process); when Redis answers again the fallback's
// state is dropped and Redis is charged again.
import type { Clock, Limits } from '../../core/index.js';
import type { StoreGeneration } from '../../core/index.js';
import { checkConfiguration } from '../buckets.js';
import type { BanPolicy, LimitResult, Limiter } from '../contract.js';
import { PolicyCache, limitResult } from '../headers.js';
import type { PolicyStrings } from '../headers.js';
import { MemoryLimiter } from '../memory.js';
import type { RedisLink } from './link.js';
import { OUTCOMES } from './script.js';

export interface RedisLimiterOptions {
  /** Prepended to every id to make its Redis key, e.g. "petstore:key:"; one per limiter. */
  readonly prefix: string;
  /** The fallback's clock (the Redis state runs on the server's TIME). */
  readonly clock: Clock;
  readonly ban: BanPolicy;
  /** The fallback's size bound (Redis entries are bounded by their expiry). */
  readonly maxEntries?: number;
  /** close() closes the link too (a limiter opened alone by openRedisLimiter). */
  readonly ownsLink?: boolean;
  /**
   * FOR TESTS ONLY: the time (ms) passed to the script instead of the server's TIME, so that a
   * test drives both limiters with one manual clock. The service never sets it.
   */
  readonly testTime?: () => number;
  /**
   * The store generation to learn from every reply (and to forget when Redis does not
   * answer), with its Redis key: set when the store caches reads (store/postgres/read-cache.ts).
   */
  readonly generation?: { readonly key: string; readonly gate: StoreGeneration };
}

export class RedisLimiter implements Limiter {
  readonly #link: RedisLink;
  readonly #prefix: string;
  readonly #fallback: MemoryLimiter;
  readonly #policies = new PolicyCache();
  readonly #ownsLink: boolean;
  readonly #testTime: (() => number) | undefined;
  readonly #generation: { readonly key: string; readonly gate: StoreGeneration } | undefined;
  /** ARGV[3] and [4] of the script: ban.after (-1 for never) and the ban's length in ms. */
  #banAfter = 0;
  #banMs = 0;

  constructor(link: RedisLink, opts: RedisLimiterOptions) {
    this.#link = link;
    this.#prefix = opts.prefix;
    this.#ownsLink = opts.ownsLink ?? false;
    this.#testTime = opts.testTime;
    this.#generation = opts.generation;
    this.#fallback = new MemoryLimiter({ clock: opts.clock, ban: opts.ban, maxEntries: opts.maxEntries });
    this.configure(opts.ban, opts.maxEntries);
    // Back to shared limits: what was charged meanwhile in this process alone is forgotten.
    link.onUp(() => this.#fallback.reset());
  }

  /** Whether Redis answers (false: the in-process fallback is answering). */
  get shared(): boolean {
    return this.#link.up;
  }

  take(id: string, limits: Limits): LimitResult | Promise<LimitResult> {
    const strings = this.#policies.get(limits);
    if (!this.#link.up) {
      this.#generation?.gate.lost();
      return this.#fallback.take(id, limits);
    }
    const args: (string | number)[] = [limits.perMinute, limits.perDay, this.#banAfter, this.#banMs];
    if (this.#testTime !== undefined) args.push(this.#testTime());
    return this.#link.take(this.#prefix + id, args, this.#generation?.key).then(
      (reply) => this.#result(reply, limits, strings) ?? this.#fail(new Error(`unexpected reply ${JSON.stringify(reply)}`), id, limits),
      (err: unknown) => this.#fail(err, id, limits),
    );
  }

  configure(ban: BanPolicy, maxEntries?: number): void {
    checkConfiguration(ban, maxEntries);
    this.#fallback.configure(ban, maxEntries);
    this.#banAfter = ban.after === Infinity ? -1 : ban.after;
    this.#banMs = ban.seconds * 1000;
  }

  /**
   * The fallback forgets ids not in `ids`. In Redis, a revoked key's entry is left to expire
   * (within a day at most): it can no longer be charged, since the key is refused first.
   */
  retain(ids: ReadonlySet<string>): void {
    this.#fallback.retain(ids);
  }

  /** Deletes this limiter's keys (by prefix, with SCAN) and the fallback's state. */
  async reset(): Promise<void> {
    this.#fallback.reset();
    await this.#link.deleteByPrefix(this.#prefix);
  }

  /** The state lives in Redis: there is nothing to save here. */
  flush(): Promise<void> {
    return Promise.resolve();
  }

  async close(): Promise<void> {
    await this.#fallback.close();
    if (this.#ownsLink) await this.#link.close();
  }

  /** Redis failed: the link logs it (once) and the fallback answers this request. */
  #fail(err: unknown, id: string, limits: Limits): LimitResult {
    this.#generation?.gate.lost();
    this.#link.failed(err);
    return this.#fallback.take(id, limits);
  }

  /** The script's reply as headers; undefined when it is not the expected shape. */
  #result(reply: unknown, limits: Limits, strings: PolicyStrings): LimitResult | undefined {
    const generation = this.#generation;
    if (!Array.isArray(reply) || reply.length !== (generation === undefined ? 5 : 6)) return undefined;
    const outcome = OUTCOMES[Number(reply[0])];
    const minute = Number(reply[1]);
    const day = Number(reply[2]);
    const waitMs = Number(reply[3]);
    const nowMs = Number(reply[4]);
    if (outcome === undefined || !Number.isFinite(minute + day + waitMs + nowMs)) return undefined;
    if (generation !== undefined) generation.gate.observe(String(reply[5]));
    return limitResult(outcome, minute, day, limits, strings, waitMs, nowMs);
  }
}
