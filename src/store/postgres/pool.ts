// Every statement goes through here, for three reasons.
//
// 1. A fair queue in front of the driver. postgres.js pipelines a query onto a busy
//    connection when all are busy, and under steady load a query so queued can wait as long
//    as the load lasts. Here statements wait in one FIFO (bounded: beyond it a statement is
//    refused at once as busy) and at most `size` are handed to the driver, so each finds an
//    idle connection; a statement's clock starts only when it is handed over.
// 2. Timeouts that measure the engine. The server bounds each statement of a transaction
//    (statement_timeout, SET LOCAL by its first statement; nothing is set for the session, so
//    a transaction pooler may hand each transaction any server connection); a single
//    statement past the bound gets a cancel request. Our own timer is a backstop for an
//    engine that does not answer at all: it first yields to the event loop (an answer may
//    wait behind our own stall), then asks whether the engine is late: if this pool was
//    answered lately, or a probe on a fresh connection is, the statement keeps waiting (up to
//    the bound). Only an engine that answers nothing is called unreachable.
// 3. Pool swaps that cut no healthy statement. The pool is replaced only when the probe got
//    no answer either, that is when every connection is stuck behind a hung server or a dead
//    network path; the old pool's statements were answered by their timers by then.
//
// The driver's failures are sorted into "the database is away" (503), "too slow: cancelled
// by the server, nothing done" (503) and the rest.
import type { Logger } from '../../core/index.js';
import { describeError } from '../../core/index.js';
import { IdsExhaustedError, StoreBusyError, StoreUnavailableError, StoreUnreachableError } from '../errors.js';
import { CONNECTION_CODES, UNAVAILABLE_STATE, answers, connectionGone, refusal, type Sql, type SqlPool, type SqlRow } from './driver.js';
import { OutageReport } from './outage.js';

/** The server's statement_timeout (or idle_in_transaction timeout) cancelled it: nothing was done. */
const CANCELLED_STATES: ReadonlySet<string> = new Set(['57014', '25P03']);
/** The identity reached its MAXVALUE (2^53 - 1): the id space is exhausted. */
const SEQUENCE_LIMIT = '2200H';
/** Statements waiting for a connection, per connection of the pool, before more are refused as busy. */
export const QUEUE_PER_CONNECTION = 1024;
/** While the engine is away, how often the pool asks it `SELECT 1` (it reconnects), requests or not. */
export const RECOVERY_PROBE_MS = 200;

/** A timer that fires this much later than asked was held up by our own event loop. */
const LAG_TOLERANCE_MS = 50;

export interface PoolOptions {
  readonly make: () => SqlPool;
  /** A pool of one connection, opened only to ask whether the engine answers at all. */
  readonly makeProbe: () => SqlPool;
  /** Connections of the pool: statements handed to the driver at once, at most. */
  readonly size: number;
  /** How long the engine may stay silent before we ask whether it is there (our backstop). */
  readonly queryTimeoutMs: number;
  /** The server's own bound on one statement; a statement waits at most this plus queryTimeoutMs. */
  readonly statementTimeoutMs: number;
  /**
   * Sent as the first statement of every transaction, without waiting for its answer (it
   * travels with the next one): the transaction's timeouts, SET LOCAL.
   */
  readonly prelude?: string;
  /** Whether statements are prepared (the driver's option, for the pool's own statements). */
  readonly prepare?: boolean;
  readonly logger: Logger;
  /** The URL without its password, for log lines. */
  readonly shown: string;
  /** Monotonic ms; default performance.now. */
  readonly now?: () => number;
}

/** What a statement handed to run() learns of its fate besides the answer. */
export interface RunState {
  /** The backstop gave up on it: it was answered as unreachable; it must not commit later. */
  abandoned: boolean;
  /** Its number when it was handed to the driver (outage.ts). */
  readonly seq: number;
}

interface Waiting {
  readonly work: (sql: Sql, state: RunState) => Promise<unknown>;
  /** `work` runs several statements (a transaction): each marks the pool as answering. */
  readonly watch: boolean;
  readonly resolve: (value: unknown) => void;
  readonly reject: (err: unknown) => void;
}

export class Pool {
  readonly #opts: PoolOptions;
  readonly #now: () => number;
  #sql: SqlPool;
  /** When the current pool last answered anything (ok or error from the server). */
  #answeredAt: number;
  /** When an outage began and ended, each dated by the statements that tell it (outage.ts). */
  readonly #outage: OutageReport;
  #closed = false;
  #inFlight = 0;
  readonly #queue: Waiting[] = [];
  #queueHead = 0;
  #probing: Promise<boolean> | undefined;
  #recovering: NodeJS.Timeout | undefined;
  /** Statements cancelled by the server's timeout, and backstop firings excused by our own lag. */
  readonly stats = { cancelled: 0, cancelRequests: 0, lagExcused: 0, probesAnswered: 0, replaced: 0 };
  readonly #prepared: { readonly prepare: boolean };

  constructor(opts: PoolOptions) {
    this.#opts = opts;
    this.#now = opts.now ?? (() => performance.now());
    this.#prepared = { prepare: opts.prepare ?? false };
    this.#sql = opts.make();
    this.#answeredAt = this.#now();
    this.#outage = new OutageReport(opts.logger, opts.shown);
  }

  /** Statements waiting for a connection. */
  get queued(): number {
    return this.#queue.length - this.#queueHead;
  }

  /**
   * One statement. Its answer marks the pool as answering when it settles (in
   * #dispatch), so the driver is called as it is, not through the watching proxy a
   * transaction's statements go through: one proxy and two closures less per statement.
   */
  query(text: string, params: readonly unknown[]): Promise<SqlRow[]> {
    return this.#enqueue((sql) => sql.unsafe(text, params, this.#prepared), false);
  }

  /** One transaction: COMMIT when `work` resolves, ROLLBACK when it throws. */
  transaction<T>(work: (tx: Sql, state: RunState) => Promise<T>): Promise<T> {
    const prelude = this.#opts.prelude;
    return this.run((sql, state) => {
      // Once begin() has rejected, its connection may be closed: the driver (postgres.js 3.4)
      // would write the next statement, or its ROLLBACK, to a null socket and throw where
      // nothing can catch it. So no statement is handed to it then, and a transaction whose
      // connection is gone does not settle (begin() has answered for it).
      let gone = false;
      const begun = (sql as SqlPool).begin((tx) => {
        // Its failure fails the transaction's next statement, and so the transaction.
        if (prelude !== undefined) tx.unsafe(prelude, [], this.#prepared).catch(() => undefined);
        return work(this.#watched(tx, this.#sql, state.seq, () => gone), state).catch((err: unknown) => {
          if (gone || connectionGone(err)) return new Promise<never>(() => undefined);
          throw err;
        });
      });
      begun.catch(() => { gone = true; });
      return begun;
    });
  }

  /**
   * Runs `work` on one connection's worth of the pool, in FIFO order with every other
   * statement, bounded as described above. `sql` is the driver's pool (a SqlPool).
   */
  run<T>(work: (sql: Sql, state: RunState) => Promise<T>): Promise<T> {
    return this.#enqueue(work, true);
  }

  #enqueue<T>(work: (sql: Sql, state: RunState) => Promise<T>, watch: boolean): Promise<T> {
    if (this.#closed) return Promise.reject(new StoreUnavailableError('the store is closed'));
    if (this.queued >= this.#opts.size * QUEUE_PER_CONNECTION) {
      return Promise.reject(new StoreBusyError(`${this.queued} statements are already waiting for PostgreSQL`));
    }
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ work, watch, resolve: resolve as (value: unknown) => void, reject });
      this.#next();
    });
  }

  /** Lets running statements finish (up to `timeoutS`), then closes every connection. Idempotent. */
  async close(timeoutS = 5): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#recovering);
    for (let w = this.#queue[this.#queueHead]; w !== undefined; w = this.#queue[++this.#queueHead]) {
      w.reject(new StoreUnavailableError('the store is closed'));
    }
    this.#queue.length = 0;
    this.#queueHead = 0;
    await this.#sql.end({ timeout: timeoutS });
  }

  #next(): void {
    while (this.#inFlight < this.#opts.size && this.#queueHead < this.#queue.length) {
      const w = this.#queue[this.#queueHead] as Waiting;
      this.#queue[this.#queueHead++] = undefined as unknown as Waiting;
      if (this.#queueHead > 1024 && this.#queueHead * 2 > this.#queue.length) {
        this.#queue.splice(0, this.#queueHead);
        this.#queueHead = 0;
      }
      this.#inFlight++;
      this.#dispatch(w);
    }
  }

  #dispatch(w: Waiting): void {
    const sql = this.#sql;
    const seq = this.#outage.send();
    const state: RunState = { abandoned: false, seq };
    const started = this.#now();
    const { statementTimeoutMs, queryTimeoutMs } = this.#opts;
    const hardLimit = statementTimeoutMs + queryTimeoutMs;
    let settled = false;
    let timer: NodeJS.Timeout | undefined;
    // A single statement (the driver's query, which can be cancelled): cancelled at the statement timeout.
    let cancel: (() => unknown) | undefined;
    const finish = (): boolean => {
      if (settled) return false;
      settled = true;
      clearTimeout(timer);
      this.#inFlight--;
      this.#next();
      return true;
    };
    const arm = (ms: number): void => {
      const due = this.#now() + ms;
      timer = setTimeout(() => void check(due), ms);
    };
    const check = async (due: number): Promise<void> => {
      if (settled) return;
      const lag = this.#now() - due;
      // An answer may be waiting behind our own stall: let the loop read it first.
      await new Promise<void>((r) => setImmediate(r));
      if (settled) return;
      if (lag > LAG_TOLERANCE_MS) {
        // The timer was late because this process was busy: the engine had less time than
        // we meant to give it. Give it the time again, counted from now.
        // (A statement still to cancel is looked at again when its cancel is due, if sooner.)
        this.stats.lagExcused++;
        arm(cancel === undefined ? queryTimeoutMs : Math.max(1, Math.min(queryTimeoutMs, statementTimeoutMs - (this.#now() - started))));
        return;
      }
      const now = this.#now();
      if (now - started < hardLimit && sql === this.#sql) {
        // Alive if this pool was answered lately, or a fresh connection is.
        if (now - this.#answeredAt < queryTimeoutMs || (await this.#probe())) {
          if (settled) return;
          const elapsed = this.#now() - started;
          if (cancel !== undefined && elapsed >= statementTimeoutMs) {
            // The server's answer to the cancel request (57014) settles it, as cancelled.
            this.stats.cancelRequests++;
            const c = cancel;
            cancel = undefined;
            Promise.resolve().then(c).catch(() => undefined);
          }
          const toCancel = cancel === undefined ? Infinity : statementTimeoutMs - elapsed;
          arm(Math.max(1, Math.min(queryTimeoutMs, toCancel, hardLimit - elapsed)));
          return;
        }
      }
      if (settled) return;
      state.abandoned = true;
      finish();
      // Nothing answered lately and a fresh connection did not either: news of now.
      const silent = sql === this.#sql && now - this.#answeredAt >= queryTimeoutMs;
      if (silent) this.#replace(sql);
      w.reject(this.#unreachable(silent ? this.#outage.send() : seq, `PostgreSQL did not answer within ${Math.round(now - started)} ms`));
    };
    let run: Promise<unknown>;
    try {
      run = w.work(w.watch ? this.#watched(sql, sql, seq) : sql, state);
    } catch (err) {
      run = Promise.reject(err);
    }
    if (!w.watch && typeof (run as { cancel?: unknown }).cancel === 'function') {
      cancel = () => (run as unknown as { cancel(): unknown }).cancel();
    }
    arm(Math.min(queryTimeoutMs, cancel === undefined ? Infinity : statementTimeoutMs));
    run.then(
      (value) => {
        if (sql === this.#sql) this.#answered(seq);
        if (finish()) w.resolve(value);
      },
      (err: unknown) => {
        if (answers(err) && sql === this.#sql) this.#answered(seq);
        if (finish()) w.reject(this.#classify(err, sql === this.#sql ? seq : undefined));
      },
    );
  }

  /** Statements of `sql` (of the driver's pool `owner`, sent as `seq`) mark the pool as answering when answered. */
  #watched<S extends Sql>(sql: S, owner: SqlPool, seq: number, gone?: () => boolean): S {
    const mark = (): void => {
      if (this.#sql !== owner) return;
      this.#answeredAt = this.#now();
      this.#outage.answered(seq);
    };
    return new Proxy(sql, {
      get(target, prop) {
        const value = Reflect.get(target, prop) as unknown;
        if (prop !== 'unsafe') return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
        return (text: string, params?: readonly unknown[], options?: { prepare?: boolean }) => {
          if (gone?.() === true) return Promise.reject(Object.assign(new Error('the connection of this transaction is closed'), { code: 'CONNECTION_CLOSED' }));
          const p = target.unsafe(text, params, options);
          p.then(mark, (err: unknown) => {
            if (answers(err)) mark();
          });
          return p;
        };
      },
    });
  }

  #answered(seq: number): void {
    this.#answeredAt = this.#now();
    this.#outage.answered(seq);
  }

  /** Whether the engine answers a trivial statement on a fresh connection within the query timeout. */
  #probe(): Promise<boolean> {
    this.#probing ??= (async () => {
      const probe = this.#opts.makeProbe();
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<boolean>((r) => { timer = setTimeout(() => r(false), this.#opts.queryTimeoutMs); });
      try {
        const ok = await Promise.race([probe.unsafe('SELECT 1').then(() => true, () => false), timeout]);
        if (ok) this.stats.probesAnswered++;
        return ok;
      } finally {
        clearTimeout(timer);
        probe.end({ timeout: 0 }).catch(() => undefined);
      }
    })().finally(() => { this.#probing = undefined; });
    return this.#probing;
  }

  /** `seq`: its statement's, from the pool in use (undefined: a replaced pool's failures say nothing of the outage). */
  #classify(err: unknown, seq: number | undefined): unknown {
    const code = (err as { code?: unknown } | null)?.code;
    if (typeof code !== 'string') return err;
    if (CANCELLED_STATES.has(code)) {
      this.stats.cancelled++;
      return new StoreUnavailableError(`PostgreSQL cancelled a statement that ran past its statement_timeout (${this.#opts.statementTimeoutMs} ms); nothing it would have done was done`);
    }
    const change = refusal(err);
    if (change !== undefined) {
      const message = `PostgreSQL refused the connection: ${describeError(err)}`;
      return seq !== undefined ? this.#unreachable(seq, message, change, err) : new StoreUnreachableError(`${message}; ${change}`, { cause: err });
    }
    if (CONNECTION_CODES.has(code) || UNAVAILABLE_STATE.test(code)) {
      const message = `PostgreSQL unreachable: ${describeError(err)}`;
      return seq !== undefined ? this.#unreachable(seq, message, undefined, err) : new StoreUnreachableError(message, { cause: err });
    }
    if (code === SEQUENCE_LIMIT) return new IdsExhaustedError('id space exhausted');
    return err;
  }

  /**
   * The error to answer statement `seq` with; the failure that begins an outage is logged
   * (outage.ts), the rest are not. `change`: the server refused the connection (an answer,
   * not an outage), and what to change.
   */
  #unreachable(seq: number, message: string, change?: string, cause?: unknown): StoreUnreachableError {
    if (!this.#closed && this.#outage.failed(seq, message, change)) this.#recover();
    return new StoreUnreachableError(change === undefined ? message : `${message}; ${change}`, cause === undefined ? undefined : { cause });
  }

  /** Whether the store is answered now: false while an outage is on (outage.ts says when it begins and ends). */
  get reachable(): boolean {
    return this.#outage.down === false;
  }

  /**
   * Asks the pool `SELECT 1` every RECOVERY_PROBE_MS while the engine is away, one at a time,
   * each bounded by the query timeout; the first answer ends the outage (#answered).
   */
  #recover(): void {
    if (this.#recovering !== undefined || this.#closed) return;
    const tick = (): void => {
      if (this.#outage.down === false || this.#closed) {
        this.#recovering = undefined;
        return;
      }
      const sql = this.#sql;
      const seq = this.#outage.send();
      let timer: NodeJS.Timeout | undefined;
      const bound = new Promise<void>((r) => { timer = setTimeout(r, this.#opts.queryTimeoutMs); });
      const asked = sql.unsafe('SELECT 1', [], this.#prepared).then(
        () => { if (sql === this.#sql) this.#answered(seq); },
        (err: unknown) => { if (answers(err) && sql === this.#sql) this.#answered(seq); },
      );
      void Promise.race([asked, bound]).then(() => {
        clearTimeout(timer);
        if (this.#closed) return;
        this.#recovering = setTimeout(tick, RECOVERY_PROBE_MS);
        this.#recovering.unref();
      });
    };
    this.#recovering = setTimeout(tick, RECOVERY_PROBE_MS);
    this.#recovering.unref();
  }

  /**
   * Nothing of `stuck` answered within the query timeout, nor did a fresh connection: its
   * connections may be stuck behind a hung server or a dead network path. New statements get
   * a fresh pool; the old one's connections are closed at once (their statements were
   * already answered by their timers).
   */
  #replace(stuck: SqlPool): void {
    if (this.#sql !== stuck || this.#closed) return;
    this.stats.replaced++;
    this.#sql = this.#opts.make();
    this.#answeredAt = this.#now();
    stuck.end({ timeout: 0 }).catch(() => undefined);
  }
}
