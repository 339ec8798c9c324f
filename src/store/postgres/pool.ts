// Every query goes through here: a timer per query (postgres.js has no client-side query
// timeout: a hung server holds a query forever, see test/support/DRIVERS.md), the pool
// replaced when one fires so that stuck connections hold no later query, and the driver's
// failures sorted into "the database is away" (503) and the rest.
import type { Logger } from '../../core/index.js';
import { describeError } from '../../core/index.js';
import { IdsExhaustedError, StoreUnavailableError, StoreUnreachableError } from '../errors.js';
import type { Sql, SqlPool, SqlRow } from './driver.js';

/** Node's and postgres.js's codes for a connection that failed, was refused or was cut. */
const CONNECTION_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ECONNABORTED', 'EPIPE', 'ETIMEDOUT', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH',
  'EHOSTDOWN', 'ENETUNREACH', 'ENETDOWN', 'CONNECT_TIMEOUT', 'CONNECTION_CLOSED', 'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
]);
/**
 * SQLSTATE classes that say the server cannot serve now, not that the query is wrong:
 * 08 connection, 28 authorization (a password changed under a running service),
 * 53 insufficient resources, 57 operator intervention (shutdown, restart), 58 system error;
 * and 25006, a read-only transaction (a failover landed on a standby).
 */
const UNAVAILABLE_STATE = /^(?:08|28|53|57|58)[0-9A-Z]{3}$|^25006$/;
/** The identity reached its MAXVALUE (2^53 - 1): the id space is exhausted. */
const SEQUENCE_LIMIT = '2200H';

const PREPARED = { prepare: true } as const;

export interface PoolOptions {
  readonly make: () => SqlPool;
  readonly queryTimeoutMs: number;
  readonly logger: Logger;
  /** The URL without its password, for log lines. */
  readonly shown: string;
}

export class Pool {
  readonly #opts: PoolOptions;
  #sql: SqlPool;
  #down = false;
  #closed = false;

  constructor(opts: PoolOptions) {
    this.#opts = opts;
    this.#sql = opts.make();
  }

  /** One prepared statement. */
  query(text: string, params: readonly unknown[]): Promise<SqlRow[]> {
    return this.run((sql) => sql.unsafe(text, params, PREPARED));
  }

  /** One transaction: COMMIT when `work` resolves, ROLLBACK when it throws. */
  transaction<T>(work: (tx: Sql) => Promise<T>): Promise<T> {
    return this.run((sql) => sql.begin(work));
  }

  /** Runs `work` on the current pool, bounded by the query timeout. */
  run<T>(work: (sql: SqlPool) => Promise<T>): Promise<T> {
    if (this.#closed) return Promise.reject(new StoreUnavailableError('the store is closed'));
    const sql = this.#sql;
    const ms = this.#opts.queryTimeoutMs;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#replace(sql);
        reject(this.#unreachable(`PostgreSQL did not answer within ${ms} ms`));
      }, ms);
      work(sql).then(
        (value) => {
          clearTimeout(timer);
          if (this.#down && sql === this.#sql) this.#up();
          resolve(value);
        },
        (err: unknown) => {
          clearTimeout(timer);
          reject(this.#classify(err, sql === this.#sql));
        },
      );
    });
  }

  /** Lets running queries finish (up to `timeoutS`), then closes every connection. Idempotent. */
  async close(timeoutS = 5): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#sql.end({ timeout: timeoutS });
  }

  /** `current`: from the pool in use (a replaced pool's failures say nothing of the outage). */
  #classify(err: unknown, current: boolean): unknown {
    const code = (err as { code?: unknown } | null)?.code;
    if (typeof code !== 'string') return err;
    if (CONNECTION_CODES.has(code) || UNAVAILABLE_STATE.test(code)) {
      const message = `PostgreSQL unreachable: ${describeError(err)}`;
      return current ? this.#unreachable(message) : new StoreUnreachableError(message);
    }
    if (code === SEQUENCE_LIMIT) return new IdsExhaustedError('id space exhausted');
    return err;
  }

  /** The error to answer with; the first of an outage is logged, the rest are not. */
  #unreachable(message: string): StoreUnreachableError {
    if (!this.#down && !this.#closed) {
      this.#down = true;
      this.#opts.logger.log('error', 'PostgreSQL unreachable; requests get 503 until it answers again', { store: this.#opts.shown, err: message });
    }
    return new StoreUnreachableError(message);
  }

  #up(): void {
    this.#down = false;
    this.#opts.logger.log('info', 'PostgreSQL answers again', { store: this.#opts.shown });
  }

  /**
   * A query timed out: its connection may be stuck behind a hung server or a dead network
   * path. New queries get a fresh pool; the old one's connections are closed at once (their
   * queries fail, and were already answered by their timers).
   */
  #replace(stuck: SqlPool): void {
    if (this.#sql !== stuck || this.#closed) return;
    this.#sql = this.#opts.make();
    stuck.end({ timeout: 0 }).catch(() => undefined);
  }
}
