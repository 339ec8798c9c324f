// Opening the PostgreSQL store: the URL's settings, the driver (imported only now), a first
// connection, the schema. Anything that stops the start is a StoreOpenError naming the
// database (its URL without the password).
import type { Clock, Logger } from '../../core/index.js';
import { DEFAULT_IDEMPOTENCY_RETENTION_HOURS, describeError, systemClock } from '../../core/index.js';
import { StoreOpenError } from '../errors.js';
import { DEFAULT_BATCHES_IN_FLIGHT } from './create-batch.js';
import { DriverMissingError, loadPostgres } from './driver.js';
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
  const { driverUrl, poolSize, queryTimeoutMs, statementTimeoutMs, connectTimeoutS, hosts } = settings;
  const options = (max: number): Record<string, unknown> => ({
    max,
    connect_timeout: connectTimeoutS,
    // No array columns: skip the type lookup each new connection would make.
    fetch_types: false,
    // CREATE ... IF NOT EXISTS says NOTICE when it exists; the driver would print it.
    onnotice: () => undefined,
    // An IPv6 literal host: given apart, since the driver cannot read it from a URL.
    ...(hosts === undefined ? {} : { host: hosts.host, port: hosts.port }),
    connection: {
      application_name: 'petstore',
      // The server bounds every statement itself and says so (pool.ts): the connection stays
      // healthy. A transaction left idle (a process stopped while holding the id lock) ends too.
      statement_timeout: statementTimeoutMs,
      idle_in_transaction_session_timeout: statementTimeoutMs,
    },
  });
  const pool = new Pool({
    make: () => factory(driverUrl, options(poolSize)),
    makeProbe: () => factory(driverUrl, options(1)),
    size: poolSize,
    queryTimeoutMs,
    statementTimeoutMs,
    logger: opts.logger,
    shown,
  });
  let schema: SchemaState;
  try {
    schema = await pool.transaction(ensureSchema);
  } catch (err) {
    await pool.close(0).catch(() => undefined);
    const why = err instanceof SchemaTooNewError ? err.message : `cannot open it: ${describeError(err)}`;
    throw new StoreOpenError(shown, `PostgreSQL store ${shown}: ${why}.`, { cause: err });
  }
  if (schema.repaired !== undefined) {
    opts.logger.log('warn', 'store schema repaired: missing indexes rebuilt', { store: shown, indexes: schema.repaired });
  }
  if (schema.upgradedFrom !== undefined) {
    opts.logger.log('info', 'store schema upgraded', { store: shown, from: schema.upgradedFrom, to: schema.version });
  }
  const batchesInFlight = (opts.processes ?? 1) > 1 ? 1 : DEFAULT_BATCHES_IN_FLIGHT;
  opts.logger.log('info', 'store opened', { store: shown, schemaVersion: schema.version, pool: poolSize, queryTimeoutMs, statementTimeoutMs, createBatchesInFlight: batchesInFlight });
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
