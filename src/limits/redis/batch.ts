// The link's pieces that are not its state: what it needs of the driver, a batch of script
// runs in flight and how their replies are handed out (the store generation's token first),
// and a command timed the way the link times Redis (link.ts says why).
//
// The store generation (core/store-generation.ts), when the store caches reads: every script
// also reads the generation's key and returns its token as the reply's last field. Before any
// request of a pipeline is answered, the link hands the gate the token of the pipeline's last
// reply (Redis ran it after every other script of the pipeline, and after each of their
// requests arrived), so each request reads the store under a token read by its own script run
// or a later one. A request answered without Redis (the fallback, a failed pipeline) makes the
// token unknown, and it stays unknown until a reply to a command sent after that request
// arrived: an older reply, late, could name a token older than a reset the request came after.
import { performance } from 'node:perf_hooks';
import type { Logger, StoreGeneration } from '../../core/index.js';
import { REPLY_SEPARATOR } from './script.js';

/** What the link needs of an ioredis pipeline. */
export interface RedisPipeline {
  evalsha(sha: string, numkeys: number, ...args: (string | number | ((err: unknown) => void))[]): RedisPipeline;
  eval(script: string, numkeys: number, ...args: (string | number | ((err: unknown) => void))[]): RedisPipeline;
  exec(): Promise<Array<[Error | null, unknown]> | null>;
}

/** What the link needs of an ioredis client (the driver is loaded only with a limits URL). */
export interface RedisClient {
  evalsha(sha: string, numkeys: number, ...args: (string | number | ((err: unknown) => void))[]): Promise<unknown>;
  eval(script: string, numkeys: number, ...args: (string | number)[]): Promise<unknown>;
  scan(cursor: string, match: 'MATCH', pattern: string, count: 'COUNT', n: number): Promise<[string, string[]]>;
  unlink(...keys: string[]): Promise<number>;
  pipeline(): RedisPipeline;
  quit(): Promise<unknown>;
  disconnect(): void;
  /** The socket (ioredis's `stream`). */
  readonly stream?: { destroy(): void };
  on(event: 'ready', fn: () => void): unknown;
}

/**
 * One script run queued on the link: the limiter builds its arguments when the link sends it
 * (until then, more requests of the same id may join it) and is told the reply or the failure.
 */
export interface ScriptJob {
  /** The Redis key (KEYS[1]). */
  readonly key: string;
  /** ARGV[1], taken once, when the job is sent: the job is closed to new requests from then on. */
  seal(): string;
  settle(reply: unknown): void;
  fail(err: unknown): void;
}

export interface RedisLinkOptions {
  readonly logger: Logger;
  /** The Redis URL without credentials, for log lines. */
  readonly where: string;
  /** Whether Redis answered at start (false: start in fallback and probe). */
  readonly up: boolean;
  /** ms between probes while Redis does not answer (default 1000). */
  readonly probeEveryMs?: number;
  /** ms of silence from Redis, while it owes us answers, after which it is down (default 250). */
  readonly commandTimeoutMs?: number;
  /** The driver's last error event: the reason behind its "Connection is closed.". */
  readonly lastError?: () => Error | undefined;
}

/** A Redis that said nothing for commandTimeoutMs while it owed us answers. */
export class RedisTimeoutError extends Error {}

/** A store generation token as the scripts make it: "<epoch>:<count>". */
export const GENERATION_TOKEN = /^\d+:\d+$/;

/**
 * A take script's reply with the store generation (script.ts): its last field is the token,
 * the rest is the limiter's reply; undefined when it is not such a reply.
 */
export function splitToken(raw: unknown): { token: string; reply: string } | undefined {
  if (typeof raw !== 'string') return undefined;
  const cut = raw.lastIndexOf(REPLY_SEPARATOR);
  if (cut < 0) return undefined;
  const token = raw.slice(cut + 1);
  return GENERATION_TOKEN.test(token) ? { token, reply: raw.slice(0, cut) } : undefined;
}

/** The store generation the link keeps its gate up to date with, and its Redis key. */
export interface GenerationFeed {
  readonly key: string;
  readonly gate: StoreGeneration;
}

export interface Batch {
  readonly jobs: ScriptJob[];
  readonly args: string[];
  /** Jobs not answered yet (all of them, or those resent after a NOSCRIPT). */
  pending: ScriptJob[];
  readonly sentAt: number;
  done: boolean;
  /** The generation key went with these scripts (KEYS[2]): their replies end with its token. */
  readonly generation: GenerationFeed | undefined;
  /** Number of the write that sent the pending scripts (#sends); a resend gets a new one. */
  seq: number;
}

/**
 * The reply of a lone script (sent as a plain EVALSHA): what deliver() does for one job,
 * without building its arrays (the usual batch when one id floods: once per round trip).
 */
export function settleLone(batch: Batch, raw: unknown, fence: number, forgetGeneration: () => void): void {
  const job = batch.jobs[0]!;
  const generation = batch.generation;
  if (generation !== undefined) {
    const split = splitToken(raw);
    if (split === undefined) {
      forgetGeneration();
      job.fail(new Error(`unexpected reply ${JSON.stringify(raw)}`));
      return;
    }
    if (batch.seq > fence) generation.gate.observe(split.token);
    raw = split.reply;
  }
  job.settle(raw);
}

/**
 * Hands the jobs `indexes` of the batch their replies (results[k] is job indexes[k]'s) or
 * failures, the store generation first: the token of the last reply, before any request is
 * answered; unknown when any of them failed (its requests go to the fallback). Returns the
 * indexes Redis had no script for, when `resendMissing` (else they fail). `fence`: replies
 * to writes numbered up to it do not name the generation (link.ts); `forgetGeneration`
 * makes it unknown.
 */
export function deliver(
  batch: Batch, indexes: readonly number[], results: Array<[Error | null, unknown]>, resendMissing: boolean,
  fence: number, forgetGeneration: () => void,
): number[] {
  const generation = batch.generation;
  const missing: number[] = [];
  const replies: unknown[] = [];
  const errors: Array<Error | undefined> = [];
  let token: string | undefined;
  let failed = false;
  indexes.forEach((i, k) => {
    const [err, raw] = results[k] ?? [new Error('no reply'), undefined];
    if (err !== null) {
      if (resendMissing && err.message.startsWith('NOSCRIPT')) missing.push(i);
      else {
        errors[k] = err;
        failed = true;
      }
      return;
    }
    if (generation === undefined) {
      replies[k] = raw;
      return;
    }
    const split = splitToken(raw);
    if (split !== undefined) {
      token = split.token;
      replies[k] = split.reply;
    } else {
      errors[k] = new Error(`unexpected reply ${JSON.stringify(raw)}`);
      failed = true;
    }
  });
  if (generation !== undefined) {
    if (failed) forgetGeneration();
    else if (token !== undefined && batch.seq > fence) generation.gate.observe(token);
  }
  indexes.forEach((i, k) => {
    const err = errors[k];
    if (err !== undefined) batch.jobs[i]!.fail(err);
    else if (k in replies) batch.jobs[i]!.settle(replies[k]);
  });
  return missing;
}


/**
 * `p`, or a RedisTimeoutError when Redis says nothing for `timeoutMs`: timed on the last reply
 * from Redis (`lastReplyAt`, performance.now()), after letting the event loop read what the
 * socket holds, as the link's watchdog does.
 */
export function answered<T>(p: Promise<T>, timeoutMs: number, lastReplyAt: () => number, replied: () => void): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    const started = performance.now();
    const check = (): void => {
      setImmediate(() => {
        if (settled) return;
        const quietMs = performance.now() - Math.max(lastReplyAt(), started);
        if (quietMs < timeoutMs) {
          timer = setTimeout(check, timeoutMs - quietMs);
          return;
        }
        settled = true;
        reject(new RedisTimeoutError(`Redis did not answer within ${timeoutMs} ms`));
      });
    };
    let timer = setTimeout(check, timeoutMs);
    p.then((v) => {
      replied();
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(v);
    }, (err: unknown) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      reject(err);
    });
  });
}
