// Opening the PostgreSQL store: the URL's settings, the driver (imported only now), a first
// connection, the schema. Anything that stops the start is a StoreOpenError naming the
// database (its URL without the password).
import type { Clock, Logger } from '../../core/index.js';
import { DEFAULT_IDEMPOTENCY_RETENTION_HOURS, describeError, systemClock } from '../../core/index.js';
import { StoreOpenError } from '../errors.js';
import { DEFAULT_BATCHES_IN_FLIGHT } from './create-batch.js';
import { DriverMissingError, loadPostgres, refusal, type Sql } from './driver.js';
import { Pool } from './pool.js';
import { PostgresStore } from './postgres-store.js';
import { SchemaTooNewError, ensureSchema, type SchemaState } from './schema.js';
import { parseSettings, redactUrl } from './settings.js';

export interface PostgresStoreOptions {
  readonly logger: Logger;
  /** Wall time for idempotency keys (their age); default the system clock. */
  readonly clock?: Clock;
  /** How long an idempotency key is remembered, in ms; default 24 hours. */
  readonly idempotencyRetentionMs?: number;
  /**
   * Processes of this service on this machine (--workers N; default 1). With more than one,
   * each keeps one batch of creates in flight instead of two (create-batch.ts).
   */
  readonly processes?: number;
  /** With more than one process: the most ms spent filling the next batch (create-batch.ts GATHER_MS). */
  readonly gatherMs?: number;
}

export async function openPostgresStore(url: string, opts: PostgresStoreOptions): Promise<PostgresStore> {
  const shown = redactUrl(url);
  let settings;
  try {
    settings = parseSettings(url);
  } catch (err) {
    throw new StoreOpenError(shown, `Cannot use the PostgreSQL store ${shown}: ${describeError(err)}.`);
  }
  let factory;
  try {
    factory = await loadPostgres();
  } catch (err) {
    if (err instanceof DriverMissingError) throw new StoreOpenError(shown, `Cannot use the PostgreSQL store: ${err.message}.`);
    throw new StoreOpenError(shown, `Cannot load the PostgreSQL driver: ${describeError(err)}.`, { cause: err });
  }
  const { driverUrl, poolSize, queryTimeoutMs, statementTimeoutMs, connectTimeoutS, hosts, prepare, ssl, sslmode } = settings;
  const options = (max: number): Record<string, unknown> => ({
    max,
    connect_timeout: connectTimeoutS,
    // Unnamed statements unless asked (settings.ts): nothing outlives a transaction.
    prepare,
    // A new connection after failed ones waits at most 100 ms (postgres.js's own backoff grows
    // to 20 s: an engine back for seconds would still be refused meanwhile). Requests do not
    // queue behind it: while the engine is away petstore answers them 503 at once.
    backoff: reconnectDelayS,
    ssl,
    // No array columns: skip the type lookup each new connection would make.
    fetch_types: false,
    // CREATE ... IF NOT EXISTS says NOTICE when it exists; the driver would print it.
    onnotice: () => undefined,
    // An IPv6 literal host: given apart, since the driver cannot read it from a URL.
    ...(hosts === undefined ? {} : { host: hosts.host, port: hosts.port }),
    // The one startup parameter besides user, database and client_encoding: every pooler
    // takes it. The timeouts are not startup parameters (a transaction pooler refuses them).
    connection: { application_name: 'petstore' },
  });
  const pool = new Pool({
    make: () => factory(driverUrl, options(poolSize)),
    makeProbe: () => factory(driverUrl, options(1)),
    size: poolSize,
    queryTimeoutMs,
    statementTimeoutMs,
    // The server bounds every statement of a transaction itself and says so (pool.ts): the
    // connection stays healthy. A transaction left idle (a process stopped while holding the
    // id lock) ends too. Local to the transaction: nothing is left on a pooled connection.
    prelude: `SELECT set_config('statement_timeout', '${statementTimeoutMs}', true), set_config('idle_in_transaction_session_timeout', '${statementTimeoutMs}', true)`,
    prepare,
    logger: opts.logger,
    shown,
  });
  let schema: SchemaState;
  let timeouts: Timeouts;
  try {
    schema = await pool.transaction(ensureSchema);
    timeouts = await timeoutsInForce(pool);
  } catch (err) {
    await pool.close(0).catch(() => undefined);
    const cause = driverError(err);
    const change = refusal(cause);
    const why = err instanceof SchemaTooNewError ? err.message
      : change !== undefined ? `refused petstore's connection: ${describeError(cause)}; ${change}`
      : `cannot open it: ${describeError(err)}`;
    throw new StoreOpenError(shown, `PostgreSQL store ${shown}: ${why}.`, { cause: err });
  }
  if (schema.repaired !== undefined) {
    opts.logger.log('warn', 'store schema repaired: missing indexes rebuilt', { store: shown, indexes: schema.repaired });
  }
  if (schema.upgradedFrom !== undefined) {
    opts.logger.log('info', 'store schema upgraded', { store: shown, from: schema.upgradedFrom, to: schema.version });
  }
  const batchesInFlight = (opts.processes ?? 1) > 1 ? 1 : DEFAULT_BATCHES_IN_FLIGHT;
  opts.logger.log('info', 'store opened', {
    store: shown, schemaVersion: schema.version, pool: poolSize, queryTimeoutMs, ...timeouts, prepare, sslmode, createBatchesInFlight: batchesInFlight,
  });
  const store = new PostgresStore(pool, {
    clock: opts.clock ?? systemClock,
    retentionMs: opts.idempotencyRetentionMs ?? DEFAULT_IDEMPOTENCY_RETENTION_HOURS * 3_600_000,
    logger: opts.logger,
    batchesInFlight,
    ...(opts.gatherMs === undefined ? {} : { gatherMs: opts.gatherMs }),
  });
  // Keys that expired while no process created any (one bounded statement; it never fails the start).
  await store.sweepExpiredKeys();
  return store;
}

/** Seconds before the `retries`th connection attempt in a row (postgres.js's backoff option). */
function reconnectDelayS(retries: number): number {
  return Math.min(0.1, 0.005 * 2 ** retries);
}

/** The timeouts as the server reports them, in ms (0: none); see the `store opened` line. */
interface Timeouts {
  /** In a transaction: the server's statement_timeout there (set by the transaction's first statement). */
  readonly statementTimeoutMs: number;
  /** In a transaction: idle_in_transaction_session_timeout. */
  readonly idleInTransactionTimeoutMs: number;
  /**
   * Outside a transaction: the server's own statement_timeout for a single statement (its
   * configuration, the role's or the database's); petstore cancels one after statementTimeoutMs.
   */
  readonly serverStatementTimeoutMs: number;
}

const READ_TIMEOUTS = `SELECT name, setting FROM pg_settings WHERE name IN ('statement_timeout', 'idle_in_transaction_session_timeout')`;

async function timeoutsInForce(pool: Pool): Promise<Timeouts> {
  const read = (rows: ReadonlyArray<Readonly<Record<string, unknown>>>, name: string): number =>
    Number(rows.find((r) => r.name === name)?.setting ?? 0);
  const inTx = await pool.transaction((tx: Sql) => tx.unsafe(READ_TIMEOUTS));
  const alone = await pool.query(READ_TIMEOUTS, []);
  return {
    statementTimeoutMs: read(inTx, 'statement_timeout'),
    idleInTransactionTimeoutMs: read(inTx, 'idle_in_transaction_session_timeout'),
    serverStatementTimeoutMs: read(alone, 'statement_timeout'),
  };
}

/** The driver's own error under the pool's (the pool prefixes and suffixes its message). */
function driverError(err: unknown): unknown {
  const cause = (err as { cause?: unknown } | null)?.cause;
  return cause ?? err;
}
