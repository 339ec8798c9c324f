// The connection to Redis that the limiters of one process share: runs the take script, knows
// whether Redis answers, and says so in the log once per change (not once per request).
//
// The traps of a Redis limiter, and what is done about each:
// - A hung Redis must not hold requests: the client has no offline queue (a command while
//   disconnected fails at once) and a short command timeout (a command sent and not answered
//   fails after commandTimeoutMs). The first failure marks the link down; from then on the
//   limiters answer from their in-process fallback at once, without asking Redis.
// - Coming back by itself: while down, a probe (the script's no-op branch) is sent every
//   probeEveryMs, and at once when the client reconnects; the first answer marks the link up.
// - A Redis restarted empty has no scripts: NOSCRIPT is answered by sending the script itself
//   (EVAL), once, which caches it again.
import { createHash } from 'node:crypto';
import type { Logger } from '../../core/index.js';
import { ADVANCE_GENERATION_SCRIPT, PROBE, TAKE_SCRIPT } from './script.js';

/** What the link needs of an ioredis client (the driver is loaded only with a limits URL). */
export interface RedisClient {
  evalsha(sha: string, numkeys: number, ...args: (string | number)[]): Promise<unknown>;
  eval(script: string, numkeys: number, ...args: (string | number)[]): Promise<unknown>;
  scan(cursor: string, match: 'MATCH', pattern: string, count: 'COUNT', n: number): Promise<[string, string[]]>;
  unlink(...keys: string[]): Promise<number>;
  quit(): Promise<unknown>;
  disconnect(): void;
  /** The socket (ioredis's `stream`). */
  readonly stream?: { destroy(): void };
  on(event: 'ready', fn: () => void): unknown;
}

export interface RedisLinkOptions {
  readonly logger: Logger;
  /** The Redis URL without credentials, for log lines. */
  readonly where: string;
  /** Whether Redis answered at start (false: start in fallback and probe). */
  readonly up: boolean;
  /** ms between probes while Redis does not answer (default 1000). */
  readonly probeEveryMs?: number;
}

export const SCRIPT_SHA = createHash('sha1').update(TAKE_SCRIPT).digest('hex');

export class RedisLink {
  readonly #client: RedisClient;
  readonly #logger: Logger;
  readonly #where: string;
  readonly #probeEveryMs: number;
  #up: boolean;
  #probeTimer: NodeJS.Timeout | undefined = undefined;
  #probing = false;
  #closed: Promise<void> | undefined = undefined;
  /** Called when Redis answers again (the limiters drop their fallback state). */
  readonly #onUp: Array<() => void> = [];

  constructor(client: RedisClient, opts: RedisLinkOptions) {
    this.#client = client;
    this.#logger = opts.logger;
    this.#where = opts.where;
    this.#probeEveryMs = opts.probeEveryMs ?? 1000;
    this.#up = opts.up;
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

  onUp(fn: () => void): void {
    this.#onUp.push(fn);
  }

  /**
   * One round trip: the take script on `key` (EVALSHA; EVAL once after a NOSCRIPT), with the
   * store generation's key when one is given (its token comes back in the reply).
   */
  take(key: string, args: readonly (string | number)[], generationKey?: string): Promise<unknown> {
    const keys = generationKey === undefined ? [key] : [key, generationKey];
    return this.#client.evalsha(SCRIPT_SHA, keys.length, ...keys, ...args).catch((err: unknown) => {
      if (err instanceof Error && err.message.startsWith('NOSCRIPT')) return this.#client.eval(TAKE_SCRIPT, keys.length, ...keys, ...args);
      throw err;
    });
  }

  /** Moves the store generation on; resolves with the new token once Redis holds it. */
  async advanceGeneration(generationKey: string): Promise<string> {
    return String(await this.#client.eval(ADVANCE_GENERATION_SCRIPT, 1, generationKey));
  }

  /**
   * A command failed or timed out: the first failure after an answer logs one error line and
   * starts probing; later ones are already covered by it.
   */
  failed(err: unknown): void {
    if (!this.#up || this.#closed !== undefined) return;
    this.#up = false;
    this.#logger.log('error', 'limits: Redis does not answer; each process now limits on its own until it does', {
      redis: this.#where, error: err instanceof Error ? err.message : String(err),
    });
    this.#startProbing();
  }

  /** Deletes every key under `prefix` (SCAN, never KEYS, so Redis is not blocked). */
  async deleteByPrefix(prefix: string): Promise<void> {
    // SCAN MATCH is a glob: escape its special characters in the prefix.
    const pattern = `${prefix.replace(/[*?[\]\\]/g, '\\$&')}*`;
    let cursor = '0';
    do {
      const [next, keys] = await this.#client.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      if (keys.length > 0) await this.#client.unlink(...keys);
      cursor = next;
    } while (cursor !== '0');
  }

  /** Stops probing and quits the connection (at once when Redis does not answer). Idempotent. */
  close(): Promise<void> {
    this.#closed ??= (async () => {
      clearInterval(this.#probeTimer);
      this.#probeTimer = undefined;
      try {
        await this.#client.quit();
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
