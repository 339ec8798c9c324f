// The Redis limiter: the same two buckets and ban as MemoryLimiter, kept in Redis so that every
// process charges the same state. One script run per id per turn of the event loop
// (script.ts): the requests of one id that arrive together share it, and the link sends every
// run ready in that turn in one pipeline. The headers come from its reply through the memory
// limiter's own limitResult(), so they cannot differ.
//
// The fallback: while Redis does not answer, the link is down and take() answers from an
// in-process MemoryLimiter at once (limits are then per process). That limiter is kept, all
// along, as a copy of what Redis last said of each id (both buckets, strikes, ban), so an
// outage starts each id where Redis left it, and bans hold. An id it never heard of from
// Redis starts as a new id would, with full buckets (outage 'open', the default): refusing
// everyone a process has not met would turn an outage plus a restart of the process into a
// full outage. With outage 'strict' it starts with empty buckets instead, so a switch to the
// fallback never hands out a fresh budget. When Redis answers again it is charged again, and
// its replies overwrite the copy.
//
// The store generation (a token the read cache of the shared store goes by) travels with the
// script's replies and is handled by the link; a request answered by the fallback makes it
// unknown (link.forgetGeneration), since no script run read it for that request.
import type { Clock, Limits } from '../../core/index.js';
import { DAY_MS, MINUTE_MS, checkConfiguration } from '../buckets.js';
import type { BanPolicy, LimitOutcome, LimitResult, Limiter } from '../contract.js';
import { PolicyCache, limitResult } from '../headers.js';
import type { PolicyStrings } from '../headers.js';
import { MemoryLimiter } from '../memory.js';
import type { RedisLink, ScriptJob } from './link.js';
import { OUTCOMES, REPLY_SEPARATOR } from './script.js';

export interface RedisLimiterOptions {
  /** Prepended to every id to make its Redis key, e.g. "petstore:key:"; one per limiter. */
  readonly prefix: string;
  /** The fallback's clock (the Redis state runs on the server's TIME). */
  readonly clock: Clock;
  readonly ban: BanPolicy;
  /**
   * While Redis does not answer, an id the fallback never heard of from Redis starts with full
   * buckets ('open', the default) or empty ones ('strict').
   */
  readonly outage?: 'open' | 'strict';
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
   * Added to the time the script takes from Redis (TIME), read at every run: the harness's
   * clock offset, the same in every process. Default () => 0.
   */
  readonly clockOffsetMs?: () => number;
}

/** The resolve of the promise take() made last (see capture). */
let captured: ((r: LimitResult) => void) | undefined;
const capture = (resolve: (r: LimitResult) => void): void => {
  captured = resolve;
};

/** Requests of one id charged by one script run at most. */
export const MAX_COALESCED = 256;

/** The requests of one id waiting for the same script run. */
class Charge implements ScriptJob {
  readonly key: string;
  readonly id: string;
  readonly limits: Limits;
  readonly strings: PolicyStrings;
  readonly waiters: Array<(r: LimitResult) => void> = [];
  readonly #owner: ChargeOwner;

  constructor(owner: ChargeOwner, key: string, id: string, limits: Limits, strings: PolicyStrings) {
    this.#owner = owner;
    this.key = key;
    this.id = id;
    this.limits = limits;
    this.strings = strings;
  }

  seal(): string {
    return this.#owner.seal(this);
  }

  settle(reply: unknown): void {
    this.#owner.settle(this, reply);
  }

  fail(err: unknown): void {
    this.#owner.fail(this, err);
  }
}

interface ChargeOwner {
  seal(c: Charge): string;
  settle(c: Charge, reply: unknown): void;
  fail(c: Charge, err: unknown): void;
}

export class RedisLimiter implements Limiter {
  readonly #link: RedisLink;
  readonly #prefix: string;
  readonly #fallback: MemoryLimiter;
  readonly #policies = new PolicyCache();
  readonly #ownsLink: boolean;
  readonly #testTime: (() => number) | undefined;
  readonly #clockOffsetMs: () => number;
  /** Charges not sent yet, by id: a request of the same id joins its run. */
  readonly #pending = new Map<string, Charge>();
  readonly #owner: ChargeOwner;
  /** ARGV[3] and [4] of the script: ban.after (-1 for never) and the ban's length in ms. */
  #banAfter = 0;
  #banMs = 0;

  constructor(link: RedisLink, opts: RedisLimiterOptions) {
    this.#link = link;
    this.#prefix = opts.prefix;
    this.#ownsLink = opts.ownsLink ?? false;
    this.#testTime = opts.testTime;
    this.#clockOffsetMs = opts.clockOffsetMs ?? (() => 0);
    this.#fallback = new MemoryLimiter({ clock: opts.clock, ban: opts.ban, maxEntries: opts.maxEntries, startEmpty: opts.outage === 'strict' });
    this.configure(opts.ban, opts.maxEntries);
    this.#owner = {
      seal: (c) => this.#seal(c),
      settle: (c, reply) => this.#settle(c, reply),
      fail: (c, err) => this.#fail(c, err),
    };
  }

  /** Whether Redis answers (false: the in-process fallback is answering). */
  get shared(): boolean {
    return this.#link.up;
  }

  take(id: string, limits: Limits): LimitResult | Promise<LimitResult> {
    // (Also past MAX_WAITING_TAKES requests waiting on Redis: waiting.ts.)
    if (!this.#link.up || !this.#link.waiting.admit()) {
      // Not charged in Redis: this request learns no store generation (link.ts).
      this.#link.forgetGeneration();
      return this.#fallback.take(id, limits);
    }
    let charge = this.#pending.get(id);
    if (charge === undefined || charge.waiters.length >= MAX_COALESCED
      || charge.limits.perMinute !== limits.perMinute || charge.limits.perDay !== limits.perDay) {
      charge = new Charge(this.#owner, this.#prefix + id, id, limits, this.#policies.get(limits));
      this.#pending.set(id, charge);
      this.#link.enqueue(charge);
    }
    // (One executor for every request, not a closure each: it leaves its resolve in
    // `captured`, which is pushed at once.)
    const promise = new Promise<LimitResult>(capture);
    charge.waiters.push(captured as (r: LimitResult) => void);
    captured = undefined;
    return promise;
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

  /** Deletes this limiter's keys (by prefix, with SCAN), then the fallback's state. */
  async reset(): Promise<void> {
    await this.#link.deleteByPrefix(this.#prefix);
    this.#fallback.reset();
  }

  /** The state lives in Redis: there is nothing to save here. */
  flush(): Promise<void> {
    return Promise.resolve();
  }

  async close(): Promise<void> {
    await this.#fallback.close();
    if (this.#ownsLink) await this.#link.close();
  }

  /** The charge goes out now: no more requests join it; its ARGV[1] (script.ts). */
  #seal(c: Charge): string {
    if (this.#pending.get(c.id) === c) this.#pending.delete(c.id);
    const args = `${c.limits.perMinute} ${c.limits.perDay} ${this.#banAfter} ${this.#banMs} ${c.waiters.length} ${this.#clockOffsetMs()}`;
    return this.#testTime === undefined ? args : `${args} ${this.#testTime()}`;
  }

  /** The script's reply: each waiter's headers, and the copy the fallback would start from. */
  #settle(c: Charge, reply: unknown): void {
    const n = c.waiters.length;
    // One string of space-separated fields (script.ts), read into numbers once.
    const f = typeof reply === 'string' ? reply.split(REPLY_SEPARATOR) : undefined;
    if (f === undefined || f.length < 9 || (f.length - 3) % 6 !== 0) return this.#bad(c, reply);
    const v = new Array<number>(f.length);
    for (let i = 0; i < f.length; i++) {
      const x = Number(f[i]);
      // (Number('') is 0: an empty field is as malformed as any other non-number.)
      if (!Number.isFinite(x) || f[i] === '') return this.#bad(c, reply);
      v[i] = x;
    }
    const nowMs = v[0]!;
    const strikes = v[1]!;
    const banMs = v[2]!;
    // Runs of answers (script.ts): [count, outcome, minute, day, wait, step], checked whole
    // before any request is answered. A run of equal answers shares one LimitResult; in a
    // stepping run each request has one token less in each bucket than the one before it,
    // by the same subtraction the script made.
    let total = 0;
    for (let i = 3; i < v.length; i += 6) {
      const count = v[i]!;
      const step = v[i + 5]!;
      if (OUTCOMES[v[i + 1]!] === undefined || !(count >= 1) || (step !== 0 && step !== 1)) return this.#bad(c, reply);
      total += count;
    }
    if (total !== n) return this.#bad(c, reply);
    // (Each waiter is a promise's resolve: it only queues the request's next step, so the
    // fallback's copy below is in place before any of them runs.)
    const waiters = c.waiters;
    let w = 0;
    let minute = 0;
    let day = 0;
    for (let i = 3; i < v.length; i += 6) {
      const count = v[i]!;
      const outcome = OUTCOMES[v[i + 1]!] as LimitOutcome;
      minute = v[i + 2]!;
      day = v[i + 3]!;
      const waitMs = v[i + 4]!;
      if (v[i + 5] === 0) {
        const result = limitResult(outcome, minute, day, c.limits, c.strings, waitMs, nowMs);
        for (let k = 0; k < count; k++) waiters[w++]!(result);
        continue;
      }
      for (let k = 0; k < count; k++) {
        if (k > 0) {
          minute -= MINUTE_MS;
          day -= DAY_MS;
        }
        waiters[w++]!(limitResult(outcome, minute, day, c.limits, c.strings, waitMs, nowMs));
      }
    }
    this.#link.waiting.release(n);
    this.#fallback.put(c.id, c.limits, { minute, day, strikes, banMs });
  }

  #bad(c: Charge, reply: unknown): void {
    this.#fail(c, new Error(`unexpected reply ${JSON.stringify(reply)}`));
  }

  /** Redis failed: the link logs it (once) and the fallback answers these requests. */
  #fail(c: Charge, err: unknown): void {
    // Failed before it was sent (the link went down meanwhile): closed to new requests too.
    if (this.#pending.get(c.id) === c) this.#pending.delete(c.id);
    this.#link.forgetGeneration();
    this.#link.failed(err);
    this.#link.waiting.release(c.waiters.length);
    for (const w of c.waiters) w(this.#fallback.take(c.id, c.limits));
  }
}
