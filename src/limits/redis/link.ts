// The connection to Redis that the limiters of one process share: runs the take script, knows
// whether Redis answers, and says so in the log once per change (not once per request).
//
// The traps of a Redis limiter, and what is done about each:
// - A hung Redis must not hold requests: the client has no offline queue (a command while
//   disconnected fails at once), and a batch of scripts sent and not answered fails after
//   commandTimeoutMs. The first failure marks the link down; from then on the limiters answer
//   from their in-process fallback at once, without asking Redis.
// - Our own stalls are not Redis's: a timer that fires late because our event loop was busy
//   (a large seed, a flood of requests) must not call Redis late when its answer is already in
//   our socket. So when the timer fires, the link first lets the event loop read what the
//   socket holds (one setImmediate: the poll phase runs before it), and counts a timeout only
//   when Redis has then said nothing at all for commandTimeoutMs. Redis answering a long queue
//   of our own commands steadily is not late either.
// - One round trip for many requests: scripts wait for the end of the current turn of the
//   event loop (setImmediate), and all that are ready then go in one pipeline, one write. At
//   most MAX_IN_FLIGHT pipelines are out at a time; the rest wait in a plain array, where the
//   limiters coalesce the requests of one id into one script run (limiter.ts), so a flood of
//   requests costs Redis, and this process, little per request. What waits is bounded
//   (waiting.ts): past MAX_WAITING_TAKES requests, more are answered by the fallback.
// - Coming back by itself: while down, a probe (the script's no-op branch) is sent every
//   probeEveryMs, and at once when the client reconnects; the first answer marks the link up.
// - A Redis restarted empty has no scripts: NOSCRIPT is answered by sending the script itself
//   (EVAL) for the scripts of that pipeline, which caches it again.
// - The store generation (core/store-generation.ts), when the store caches reads: every script
//   also returns its token, handed to the gate before any request is answered (batch.ts).
import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Logger, StoreGeneration } from '../../core/index.js';
import {
  GENERATION_TOKEN, RedisTimeoutError, answered, deliver, settleLone, type Batch, type GenerationFeed, type RedisClient, type RedisLinkOptions, type ScriptJob,
} from './batch.js';
import { ADVANCE_GENERATION_SCRIPT, PROBE, TAKE_SCRIPT } from './script.js';
import { WaitingTakes } from './waiting.js';

export { RedisTimeoutError } from './batch.js';
export { MAX_WAITING_TAKES } from './waiting.js';
export type { RedisClient, RedisLinkOptions, RedisPipeline, ScriptJob } from './batch.js';

export const SCRIPT_SHA = createHash('sha1').update(TAKE_SCRIPT).digest('hex');

/** Pipelines out at a time; more scripts wait (and coalesce) until one is answered. */
export const MAX_IN_FLIGHT = 4;
/** Scripts in one pipeline. */
export const MAX_BATCH = 512;

export class RedisLink {
  readonly #client: RedisClient;
  readonly #logger: Logger;
  readonly #where: string;
  readonly #probeEveryMs: number;
  readonly #timeoutMs: number;
  readonly #lastError: () => Error | undefined;
  #up: boolean;
  #probeTimer: NodeJS.Timeout | undefined = undefined;
  #probing = false;
  #closed: Promise<void> | undefined = undefined;
  readonly #onUp: Array<() => void> = []; // called when Redis answers again
  /** Jobs waiting for the next pipeline. */
  #queue: ScriptJob[] = [];
  /** Batches sent and not over, which the one watchdog timer looks after. */
  readonly #watched = new Set<Batch>();
  /** The watchdog timer: set from its arming until its sweep has run (see #sweep). */
  #watchdog: NodeJS.Timeout | undefined = undefined;
  #scheduled = false;
  #inFlight = 0;
  /** performance.now() of the last reply read from Redis (any command of a pipeline). */
  #lastReplyAt = 0;
  #pipelines = 0; // pipelines and scripts sent, for tests and benchmarks
  #scripts = 0;
  /** The store generation fed from the replies; undefined when the store keeps no cache. */
  #generation: GenerationFeed | undefined = undefined;
  /** Writes that may carry a generation token (pipelines, resends, advances), numbered. */
  #sends = 0;
  /** Replies to writes numbered up to this one do not name the generation (see above). */
  #fence = 0;
  readonly waiting: WaitingTakes; // requests waiting on Redis, bounded (waiting.ts)

  constructor(client: RedisClient, opts: RedisLinkOptions) {
    this.#client = client;
    this.#logger = opts.logger;
    this.#where = opts.where;
    this.#probeEveryMs = opts.probeEveryMs ?? 1000;
    this.#timeoutMs = opts.commandTimeoutMs ?? 250;
    this.#lastError = opts.lastError ?? (() => undefined);
    this.#up = opts.up;
    this.waiting = new WaitingTakes(opts.logger, opts.where);
    // A reconnect is the likeliest moment Redis answers again: probe at once.
    client.on('ready', () => {
      if (!this.#up) this.#probe();
    });
    if (!this.#up) this.#startProbing();
  }

  /** Whether the last command answered: if not, the limiters use their fallback. */
  get up(): boolean {
    return this.#up;
  }

  /** Pipelines and scripts sent so far (each pipeline is one write and one round trip). */
  get sent(): { pipelines: number; scripts: number } {
    return { pipelines: this.#pipelines, scripts: this.#scripts };
  }

  onUp(fn: () => void): void {
    this.#onUp.push(fn);
  }

  /**
   * From now on every script also returns the store generation kept under `key`, and `gate`
   * learns it from each pipeline's replies before their requests are answered.
   */
  trackGeneration(gate: StoreGeneration, key: string): void {
    this.#generation = { key, gate };
  }

  /**
   * A request is answered without a script run in Redis (a limiter's fallback): the store
   * generation is unknown until a reply to a later write names it.
   */
  forgetGeneration(): void {
    const generation = this.#generation;
    if (generation === undefined) return;
    this.#fence = this.#sends;
    generation.gate.lost();
  }

  /**
   * Moves the store generation on, over this connection (a reset, a seed), and tells the gate
   * the new token the moment Redis's reply is read, unless a request was answered without
   * Redis meanwhile. Resolves once Redis holds it; rejects when Redis does not answer.
   */
  async advanceGeneration(): Promise<undefined> {
    const generation = this.#generation;
    if (generation === undefined) throw new Error('the link keeps no store generation');
    const seq = ++this.#sends;
    const token = String(await this.#timed(this.#client.eval(ADVANCE_GENERATION_SCRIPT, 1, generation.key)));
    if (!GENERATION_TOKEN.test(token)) throw new Error(`unexpected store generation ${JSON.stringify(token)}`);
    if (seq > this.#fence) generation.gate.observe(token);
    return undefined;
  }

  /** Queues a script run; it goes out with the others ready at the end of this turn. */
  enqueue(job: ScriptJob): void {
    this.#queue.push(job);
    if (!this.#scheduled) {
      this.#scheduled = true;
      setImmediate(this.#flushNow);
    }
  }

  /** The end of the turn: what is queued goes out (one function for every turn, not a closure each). */
  readonly #flushNow = (): void => {
    this.#scheduled = false;
    this.#flush();
  };

  /**
   * A command failed or timed out: the first failure after an answer logs one error line and
   * starts probing; later ones are already covered by it.
   */
  failed(err: unknown): void {
    if (!this.#up || this.#closed !== undefined) return;
    this.#up = false;
    const error = err instanceof Error ? err.message : String(err);
    // The driver's own words for a lost connection say no more; its last error event says why.
    const cause = /^Connection is closed/.test(error) ? this.#lastError() : undefined;
    this.#logger.log('error', 'limits: Redis does not answer; each process now limits on its own until it does', {
      redis: this.#where, error, ...(cause === undefined ? {} : { cause: cause.message }),
    });
    this.#startProbing();
  }

  /** Deletes every key under `prefix` (SCAN, never KEYS, so Redis is not blocked). */
  async deleteByPrefix(prefix: string): Promise<void> {
    if (!this.#up) throw new RedisTimeoutError('Redis does not answer');
    // SCAN MATCH is a glob: escape its special characters in the prefix.
    const pattern = `${prefix.replace(/[*?[\]\\]/g, '\\$&')}*`;
    let cursor = '0';
    do {
      const [next, keys] = await this.#timed(this.#client.scan(cursor, 'MATCH', pattern, 'COUNT', 1000));
      if (keys.length > 0) await this.#timed(this.#client.unlink(...keys));
      cursor = next;
    } while (cursor !== '0');
  }

  /** Stops probing and quits the connection (at once when Redis does not answer). Idempotent. */
  close(): Promise<void> {
    this.#closed ??= (async () => {
      clearInterval(this.#probeTimer);
      this.#probeTimer = undefined;
      try {
        await this.#timed(this.#client.quit());
        this.#client.disconnect();
      } catch {
        // Not connected or not answering: nothing to say goodbye to. disconnect() alone ends
        // the socket politely and a hung server holds it (and the process) for 2 s more.
        this.#client.disconnect();
        this.#client.stream?.destroy();
      }
    })();
    return this.#closed;
  }

  /** Sends what is queued, up to MAX_IN_FLIGHT pipelines; the rest waits for an answer. */
  #flush(): void {
    if (!this.#up || this.#closed !== undefined) {
      // Known to be away: every waiting request is answered by the fallback at once.
      const jobs = this.#queue;
      this.#queue = [];
      if (jobs.length > 0) this.forgetGeneration();
      const err = new RedisTimeoutError('Redis does not answer');
      for (const job of jobs) job.fail(err);
      return;
    }
    while (this.#inFlight < MAX_IN_FLIGHT && this.#queue.length > 0) {
      const jobs = this.#queue.length <= MAX_BATCH ? this.#queue : this.#queue.slice(0, MAX_BATCH);
      this.#queue = jobs === this.#queue ? [] : this.#queue.slice(MAX_BATCH);
      this.#send(jobs);
    }
  }

  #send(jobs: ScriptJob[]): void {
    this.#inFlight++;
    const generation = this.#generation;
    const batch: Batch = {
      jobs, args: jobs.map((j) => j.seal()), pending: jobs, sentAt: performance.now(), done: false,
      generation, seq: ++this.#sends,
    };
    this.#pipelines++;
    this.#scripts += jobs.length;
    this.#watched.add(batch);
    // (A watchdog already armed fires before this batch's time is up, and arms the next.)
    if (this.#watchdog === undefined) this.#arm(this.#timeoutMs);
    if (jobs.length === 1) {
      // One script (the usual batch when one id floods: its requests share one run): sent as
      // a plain command, without a pipeline object, which costs ioredis about a third more
      // per write. Its outcome takes the pipeline's shape, so NOSCRIPT and failures go the
      // same way.
      // (No callback for #replied: ioredis would chain one more promise to call it; the
      // handlers below note the reply themselves, first thing.)
      const job = jobs[0]!;
      const sent = generation === undefined
        ? this.#client.evalsha(SCRIPT_SHA, 1, job.key, batch.args[0]!)
        : this.#client.evalsha(SCRIPT_SHA, 2, job.key, generation.key, batch.args[0]!);
      sent.then(
        (reply) => {
          this.#replied();
          this.#settleOne(batch, reply);
        },
        (err: unknown) => {
          this.#replied();
          this.#settle(batch, [[err instanceof Error ? err : new Error(String(err)), undefined]]);
        },
      );
      return;
    }
    const pipeline = this.#client.pipeline();
    for (let i = 0; i < jobs.length; i++) {
      if (generation === undefined) pipeline.evalsha(SCRIPT_SHA, 1, jobs[i]!.key, batch.args[i]!, this.#replied);
      else pipeline.evalsha(SCRIPT_SHA, 2, jobs[i]!.key, generation.key, batch.args[i]!, this.#replied);
    }
    pipeline.exec().then(
      (results) => this.#settle(batch, results),
      (err: unknown) => this.#finish(batch, err),
    );
  }

  /** Each reply read from Redis, in order: Redis is answering. */
  readonly #replied = (): void => {
    this.#lastReplyAt = performance.now();
  };

  /** The reply of a lone script (sent as a plain EVALSHA): batch.ts settleLone. */
  #settleOne(batch: Batch, raw: unknown): void {
    if (batch.done) return; // timed out meanwhile: the fallback answered these requests
    settleLone(batch, raw, this.#fence, this.#forget);
    this.#finish(batch, undefined);
  }

  #settle(batch: Batch, results: Array<[Error | null, unknown]> | null): void {
    if (batch.done) return; // timed out meanwhile: the fallback answered these requests
    if (results === null) return this.#finish(batch, new Error('the pipeline was discarded'));
    const missing = deliver(batch, batch.jobs.map((_, i) => i), results, true, this.#fence, this.#forget);
    if (missing.length === 0) return this.#finish(batch, undefined);
    // Redis restarted empty: send the script itself for these (the first EVAL caches it). The
    // batch's timer keeps watching them.
    batch.pending = missing.map((i) => batch.jobs[i]!);
    batch.seq = ++this.#sends;
    const again = this.#client.pipeline();
    const generation = batch.generation;
    for (const i of missing) {
      if (generation === undefined) again.eval(TAKE_SCRIPT, 1, batch.jobs[i]!.key, batch.args[i]!, this.#replied);
      else again.eval(TAKE_SCRIPT, 2, batch.jobs[i]!.key, generation.key, batch.args[i]!, this.#replied);
    }
    again.exec().then(
      (res) => {
        if (batch.done) return;
        deliver(batch, missing, res ?? [], false, this.#fence, this.#forget);
        batch.pending = [];
        this.#finish(batch, undefined);
      },
      (err: unknown) => this.#finish(batch, err),
    );
  }

  /** The batch is over: fails what is still waiting in it (on `err`) and sends more. */
  #finish(batch: Batch, err: unknown): void {
    if (batch.done) return;
    batch.done = true;
    this.#watched.delete(batch);
    if (err !== undefined && batch.pending.length > 0) {
      this.forgetGeneration();
      for (const job of batch.pending) job.fail(err);
    }
    this.#release();
  }

  #release(): void {
    this.#inFlight--;
    if (this.#queue.length > 0) this.#flush();
  }

  /**
   * The watchdog fired. Our own loop may have stalled past it with the answers already in the
   * socket: let the poll phase read them first (setImmediate runs after it), then sweep.
   */
  readonly #fire = (): void => {
    setImmediate(this.#sweep);
  };

  /**
   * Each batch sent and not over times out once Redis has said nothing for the whole timeout
   * since it was sent; the watchdog is armed again for the first that may time out next. One
   * timer for every batch in flight, not one set and cleared per round trip: a batch that is
   * answered in time is only taken out of the set. Once no batch is left the watchdog stays
   * unarmed until the next is sent.
   */
  readonly #sweep = (): void => {
    this.#watchdog = undefined;
    const now = performance.now();
    const quietSince = this.#lastReplyAt;
    let next = Infinity;
    for (const batch of this.#watched) {
      const quietMs = now - Math.max(quietSince, batch.sentAt);
      if (quietMs >= this.#timeoutMs) this.#finish(batch, new RedisTimeoutError(`Redis did not answer within ${this.#timeoutMs} ms`));
      else next = Math.min(next, this.#timeoutMs - quietMs);
    }
    // (A batch sent by #finish above, through #release, may have armed it already.)
    if (next !== Infinity && this.#watchdog === undefined) this.#arm(next);
  };

  /**
   * Not holding the process open by itself: a batch in flight has the connection to Redis,
   * which does; so an armed watchdog that outlives its last batch delays no exit.
   */
  #arm(ms: number): void {
    this.#watchdog = setTimeout(this.#fire, ms);
    this.#watchdog.unref();
  }

  /** `p`, or a RedisTimeoutError when Redis says nothing for the timeout (batch.ts). */
  #timed<T>(p: Promise<T>): Promise<T> {
    return answered(p, this.#timeoutMs, () => this.#lastReplyAt, this.#replied);
  }

  readonly #forget = (): void => this.forgetGeneration();

  #startProbing(): void {
    if (this.#probeTimer !== undefined || this.#closed !== undefined) return;
    this.#probeTimer = setInterval(() => this.#probe(), this.#probeEveryMs);
    this.#probeTimer.unref();
  }

  #probe(): void {
    if (this.#probing || this.#up || this.#closed !== undefined) return;
    this.#probing = true;
    this.#client.evalsha(SCRIPT_SHA, 0, PROBE)
      .catch((err: unknown) => {
        if (err instanceof Error && err.message.startsWith('NOSCRIPT')) return this.#client.eval(TAKE_SCRIPT, 0, PROBE);
        throw err;
      })
      .then(
        () => {
          this.#probing = false;
          if (this.#closed !== undefined) return;
          clearInterval(this.#probeTimer);
          this.#probeTimer = undefined;
          this.#up = true;
          for (const fn of this.#onUp) fn();
          this.#logger.log('info', 'limits: Redis answers again; limits are shared again', { redis: this.#where });
        },
        () => {
          // Still away (or still refusing): the next probe tries again; the error was logged.
          this.#probing = false;
        },
      );
  }
}
