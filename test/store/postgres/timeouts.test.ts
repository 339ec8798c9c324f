// The timeouts without a session: nothing is sent as a startup parameter or set for the
// session (a transaction pooler hands each transaction any server connection), so a
// transaction sets its own (SET LOCAL, with its first statement) and a single statement past
// the statement timeout is cancelled by a cancel request. The `store opened` line reports
// what the server says is in force. Against a real server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import postgres from 'postgres';
import { silentLogger } from '../../../src/core/index.js';
import type { LogLevel, Logger } from '../../../src/core/types.js';
import { openPostgresStore, StoreUnavailableError } from '../../../src/store/index.js';
import type { SqlPool } from '../../../src/store/postgres/driver.js';
import { Pool } from '../../../src/store/postgres/pool.js';
import { skipUnless } from '../../support/engines.js';
import { startPostgres } from '../../support/postgres.js';

const skip = skipUnless('PostgreSQL timeout tests', ['postgres']);

function recordingLogger(): Logger & { lines: Array<{ level: LogLevel; msg: string; fields?: Record<string, unknown> }> } {
  const lines: Array<{ level: LogLevel; msg: string; fields?: Record<string, unknown> }> = [];
  return { lines, log: (level, msg, fields) => void lines.push({ level, msg, fields }) };
}

test('the store opened line reports the timeouts the server says are in force; none is left on the session', { skip }, async (t) => {
  const pg = await startPostgres({ t });
  const logger = recordingLogger();
  // One connection: the statement read outside a transaction runs where the transactions ran.
  const store = await openPostgresStore(`${pg.url}?statement_timeout=1500&max=1`, { logger });
  await store.close();
  const opened = logger.lines.find((l) => l.msg === 'store opened')?.fields;
  assert.deepEqual(
    { st: opened?.statementTimeoutMs, idle: opened?.idleInTransactionTimeoutMs, server: opened?.serverStatementTimeoutMs, prepare: opened?.prepare },
    { st: 1500, idle: 1500, server: 0, prepare: false },
  );
  // The operator's own bound (the database's, here) is what single statements get from the server.
  await pg.psql(`ALTER DATABASE ${pg.database} SET statement_timeout = 7000`);
  const again = recordingLogger();
  const second = await openPostgresStore(pg.url, { logger: again });
  await second.close();
  const fields = again.lines.find((l) => l.msg === 'store opened')?.fields;
  assert.equal(fields?.statementTimeoutMs, 30000);
  assert.equal(fields?.serverStatementTimeoutMs, 7000);
});

test('past the statement timeout: a transaction is cancelled by the server, a single statement by a cancel request', { skip }, async (t) => {
  const pg = await startPostgres({ t });
  const make = (): SqlPool => postgres(pg.url, { max: 2, prepare: false, fetch_types: false, onnotice: () => undefined }) as unknown as SqlPool;
  const pool = new Pool({
    make, makeProbe: () => postgres(pg.url, { max: 1, prepare: false, fetch_types: false }) as unknown as SqlPool,
    size: 2, queryTimeoutMs: 300, statementTimeoutMs: 800, logger: silentLogger, shown: 'test',
    prelude: "SELECT set_config('statement_timeout', '800', true), set_config('idle_in_transaction_session_timeout', '800', true)",
  });
  t.after(() => pool.close());
  await assert.rejects(pool.transaction((tx) => tx.unsafe('SELECT pg_sleep(20)')), (err: Error) => {
    assert.ok(err instanceof StoreUnavailableError, String(err));
    assert.match(err.message, /cancelled a statement that ran past its statement_timeout \(800 ms\)/);
    return true;
  });
  assert.equal(pool.stats.cancelRequests, 0, 'the server cancelled it itself');
  await assert.rejects(pool.query('SELECT pg_sleep(20)', []), (err: Error) => {
    assert.ok(err instanceof StoreUnavailableError, String(err));
    assert.match(err.message, /cancelled a statement/);
    return true;
  });
  assert.equal(pool.stats.cancelRequests, 1, 'petstore asked the server to cancel it');
  assert.equal(await pg.psql("SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE 'SELECT pg_sleep%'"), '0\n', 'nothing still sleeping');
  // A transaction left idle past the bound is ended by the server (its locks go with it).
  await assert.rejects(pool.transaction(async (tx) => {
    await tx.unsafe('SELECT 1');
    await new Promise((r) => setTimeout(r, 1500));
    await tx.unsafe('SELECT 1');
  }));
  assert.deepEqual([...await pool.query('SELECT 2 AS two', [])], [{ two: 2 }], 'the pool works on');
});
