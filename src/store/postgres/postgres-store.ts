// The PetStore on PostgreSQL: every read is one statement on a shared table, and every
// create is committed (grouped with the others of the same moment, create-batch.ts) before
// it is answered, so every process sees every pet on its next request. No page version is
// offered: another process may add pets at any time.
//
// Ids become visible in the order they were given: creates, seeds and reset all take the
// same transaction-level advisory lock before they draw or plan ids, and hold it to commit.
// INVARIANT (relied on by read caches): once id N is visible, every id below N is either
// visible or will never exist.
import type { NewPet, PetStatus } from '../../core/index.js';
import { checkSeedInput, planBatch, type Op } from '../batch.js';
import { makePet, petJson } from '../codec.js';
import type { CreateOutcome, IdempotencyKey, ListQuery, PetStore, SeedPet, StoredPet } from '../contract.js';
import type { SqlRow } from './driver.js';
import { GroupCommit, type CreateWatch, type GroupCommitOptions } from './create-batch.js';
import { KeyedCreates, type KeyedCreateOptions } from './keyed-create.js';
import type { Pool } from './pool.js';
import { ID_SEQUENCE, KEYS_TABLE, ORDER_LOCK, PETS_TABLE } from './schema.js';

const COLUMNS = 'id, name, category_id, status';
const GET = `SELECT ${COLUMNS} FROM ${PETS_TABLE} WHERE id = $1`;
const LIST = `SELECT ${COLUMNS} FROM ${PETS_TABLE} WHERE id > $1 ORDER BY id LIMIT $2`;
const LIST_STATUS = `SELECT ${COLUMNS} FROM ${PETS_TABLE} WHERE status = $1 AND id > $2 ORDER BY id LIMIT $3`;
// Creates of every process wait while a seed or a reset holds it (they would take ids meanwhile).
const LOCK_IDS = `SELECT pg_advisory_xact_lock(${ORDER_LOCK})`;
const NEXT_ID = `SELECT CASE WHEN is_called THEN last_value + 1 ELSE last_value END AS next FROM ${ID_SEQUENCE}`;
// The text is cast in SQL: a parameter typed json would be JSON-encoded once more by the driver.
const INSERT_SEEDED = `INSERT INTO ${PETS_TABLE} (id, name, category_id, status) OVERRIDING SYSTEM VALUE
  SELECT id, name, category_id, status FROM json_to_recordset($1::text::json) AS p(id bigint, name text, category_id bigint, status text)`;
// Keeps the identity ahead of the explicit ids just stored.
const ADVANCE = `SELECT setval('${ID_SEQUENCE}', $1, true)`;
// Under the id lock, and without TRUNCATE: a create statement holds its table locks while it
// waits for the id lock, so a TRUNCATE (which needs the tables alone) under the id lock
// could deadlock with it. DELETE needs no more than a create does. The identity restarts
// with the transaction (ALTER SEQUENCE is transactional).
const RESET = [`DELETE FROM ${KEYS_TABLE}`, `DELETE FROM ${PETS_TABLE}`, `ALTER SEQUENCE ${ID_SEQUENCE} RESTART`];
/** Pets per INSERT of a seed: one JSON parameter each, well under any message size limit. */
const SEED_CHUNK = 5000;

function storedFrom(row: SqlRow): StoredPet {
  // bigint columns arrive as decimal strings; the schema keeps them within the safe range.
  const pet = makePet(Number(row.id), row.name as string, Number(row.category_id), (row.status ?? undefined) as PetStatus | undefined);
  return { pet, json: petJson(pet) };
}

function storedRows(rows: SqlRow[]): StoredPet[] {
  return rows.map(storedFrom);
}

export class PostgresStore implements PetStore {
  readonly #pool: Pool;
  readonly #batch: GroupCommit;
  readonly #keyed: KeyedCreates;

  constructor(pool: Pool, keys: KeyedCreateOptions & Pick<GroupCommitOptions, 'batchesInFlight' | 'gatherMs'>) {
    this.#pool = pool;
    this.#batch = new GroupCommit(pool, keys);
    this.#keyed = new KeyedCreates(pool, this.#batch, keys);
  }

  /** Statements and creates sent by the group commit, lost answers found out or left unknown. */
  get batchStats(): Readonly<GroupCommit['stats']> {
    return this.#batch.stats;
  }

  /** Sweeps of expired keys started (keyed-create.ts). */
  get keyStats(): Readonly<KeyedCreates['stats']> {
    return this.#keyed.stats;
  }

  get(id: number): StoredPet | undefined | Promise<StoredPet | undefined> {
    // Not an id this store can hold (0, negatives, beyond 2^53): unknown, without asking.
    if (!Number.isSafeInteger(id) || id < 1) return undefined;
    return this.#pool.query(GET, [id]).then((rows) => (rows.length === 0 ? undefined : storedFrom(rows[0] as SqlRow)));
  }

  list(q: ListQuery): Promise<StoredPet[]> {
    const after = q.afterId ?? 0;
    const rows = q.status === undefined
      ? this.#pool.query(LIST, [after, q.limit])
      : this.#pool.query(LIST_STATUS, [q.status, after, q.limit]);
    return rows.then(storedRows);
  }

  /** Resolves once the statement that made it, and so its commit, has been answered. */
  create(input: NewPet): Promise<StoredPet> {
    return this.#batch.create(input);
  }

  /** `watch` is told of every pet create() makes, before it is answered (read-cache.ts). */
  watchCreates(watch: CreateWatch): void {
    this.#batch.watch(watch);
  }

  /** The key and the pet in one statement (keyed-create.ts). */
  createIdempotent(input: NewPet, idem: IdempotencyKey): Promise<CreateOutcome> {
    return this.#keyed.create(input, idem);
  }

  /** Deletes up to 1000 expired idempotency keys (also run every 100 keyed creates); resolves with how many. */
  sweepExpiredKeys(): Promise<number> {
    return this.#keyed.sweep();
  }

  /**
   * One transaction: the id lock taken (creates of every process wait), the ids planned exactly as the file
   * store plans them (same checks, same messages), the pets inserted, the identity moved past
   * the last one.
   */
  async seed(pets: ReadonlyArray<SeedPet>): Promise<StoredPet[]> {
    checkSeedInput(pets);
    return this.#pool.transaction(async (tx, state) => {
      await tx.unsafe(LOCK_IDS);
      const next = Number((await tx.unsafe(NEXT_ID))[0]?.next);
      const planned = plan(pets, next);
      for (let i = 0; i < planned.length; i += SEED_CHUNK) {
        const chunk = planned.slice(i, i + SEED_CHUNK).map(({ pet }) => ({
          id: pet.id, name: pet.name, category_id: pet.categoryId, status: pet.status ?? null,
        }));
        await tx.unsafe(INSERT_SEEDED, [JSON.stringify(chunk)]);
      }
      const last = planned[planned.length - 1];
      if (last !== undefined) await tx.unsafe(ADVANCE, [last.pet.id]);
      // Answered as unreachable meanwhile: roll back rather than commit what was refused.
      if (state.abandoned) throw new Error('the seed was given up on before its commit');
      return planned;
    });
  }

  async reset(): Promise<void> {
    await this.#pool.transaction(async (tx, state) => {
      await tx.unsafe(LOCK_IDS);
      for (const statement of RESET) await tx.unsafe(statement);
      if (state.abandoned) throw new Error('the reset was given up on before its commit');
    });
  }

  /** See PetStore.reachable. */
  get reachable(): boolean {
    return this.#pool.reachable;
  }

  close(): Promise<void> {
    return this.#pool.close();
  }
}

/** The file store's id planning (batch.ts) for one seed when the next free id is `next`. */
function plan(pets: ReadonlyArray<SeedPet>, next: number): StoredPet[] {
  let failure: Error | undefined;
  // planBatch settles only a refusal; the planned pets are read from the batch.
  const op: Op = { kind: 'seed', input: pets, resolve: () => undefined, reject: (err) => { failure = err; } };
  const batch = planBatch([op], next, false);
  if (failure !== undefined) throw failure;
  return batch.steps[0]?.pets ?? [];
}
