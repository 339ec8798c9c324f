// The group commit's lost answers, against a real server: the batch statement runs (or does
// not), and then its answer is lost on the way back (the pool says unreachable, as it does when
// the connection is cut after the statement was sent). The batch token must tell what happened:
// the creates it made are answered with their ids, once; a statement that never ran is sent again.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import postgres from 'postgres';
import { ManualClock } from '../../../src/core/clock.js';
import { silentLogger } from '../../../src/core/index.js';
import type { NewPet } from '../../../src/core/types.js';
import { StoreUnreachableError } from '../../../src/store/errors.js';
import { GroupCommit } from '../../../src/store/postgres/create-batch.js';
import type { SqlPool, SqlRow } from '../../../src/store/postgres/driver.js';
import { Pool } from '../../../src/store/postgres/pool.js';
import { ensureSchema } from '../../../src/store/postgres/schema.js';
import { skipUnless } from '../../support/engines.js';
import { startPostgres } from '../../support/postgres.js';

const skip = skipUnless('PostgreSQL batch token tests', ['postgres']);

/** A pool whose next batch statement loses its answer: after running it ('after'), or instead of it ('before'). */
class LosingPool extends Pool {
  lose: 'after' | 'before' | undefined;
  override async query(text: string, params: readonly unknown[]): Promise<SqlRow[]> {
    const lose = text.includes('nextval') ? this.lose : undefined;
    if (lose === undefined) return super.query(text, params);
    this.lose = undefined;
    if (lose === 'after') await super.query(text, params);
    throw new StoreUnreachableError('PostgreSQL unreachable: write ECONNRESET');
  }
}

async function setUp(t: TestContext): Promise<{ pool: LosingPool; batch: GroupCommit; psql: (sql: string) => Promise<string> }> {
  const pg = await startPostgres({ t });
  const make = (): SqlPool => postgres(pg.url, { max: 2, fetch_types: false, onnotice: () => undefined }) as unknown as SqlPool;
  const setup = make();
  await ensureSchema(setup);
  await setup.end();
  const pool = new LosingPool({ make, makeProbe: make, size: 2, queryTimeoutMs: 5000, statementTimeoutMs: 5000, logger: silentLogger, shown: 'test' });
  t.after(() => pool.close());
  const batch = new GroupCommit(pool, { clock: new ManualClock(), retentionMs: 3_600_000, logger: silentLogger });
  return { pool, batch, psql: (sql) => pg.psql(sql) };
}

const pets = (n: number): NewPet[] => Array.from({ length: n }, (_, i) => ({ name: `p${i}`, categoryId: i, ...(i % 2 === 0 ? { status: 'sold' as const } : {}) }));

test('a batch without keys whose answer is lost after its commit: its creates are answered with the ids it made, nothing is made twice', { skip }, async (t) => {
  const { pool, batch, psql } = await setUp(t);
  pool.lose = 'after';
  const input = pets(10);
  const results = await Promise.all(input.map((p) => batch.submit(p)));
  assert.deepEqual(results.map((r) => r.kind), Array(10).fill('made'));
  assert.equal(batch.stats.resolved, 10, 'found out from the token');
  assert.equal(batch.stats.batches, 1, 'not sent again');
  const ids = results.map((r) => (r.kind === 'made' ? r.id : 0));
  assert.deepEqual(ids, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 'each create its own id, in order');
  const rows = (await psql('SELECT id, name, category_id, coalesce(status, \'-\') FROM petstore_pets ORDER BY id')).trim().split('\n');
  assert.deepEqual(rows, input.map((p, i) => `${i + 1}|${p.name}|${p.categoryId}|${p.status ?? '-'}`), 'each id holds its own create');
});

test('a batch without keys whose statement never ran: the token is voided and the creates are sent once more, made once', { skip }, async (t) => {
  const { pool, batch, psql } = await setUp(t);
  pool.lose = 'before';
  const results = await Promise.all(pets(5).map((p) => batch.submit(p)));
  assert.deepEqual(results.map((r) => (r.kind === 'made' ? r.id : r.kind)), [1, 2, 3, 4, 5]);
  assert.equal(batch.stats.resolved, 5);
  assert.equal(batch.stats.batches, 2, 'sent again after the token said it never committed');
  assert.equal(await psql('SELECT count(*) FROM petstore_pets'), '5\n');
  assert.equal(await psql("SELECT count(*) FROM petstore_idempotency_keys WHERE scope = '' AND fingerprint = 'void'"), '1\n', 'the lost statement can no longer commit');
});
