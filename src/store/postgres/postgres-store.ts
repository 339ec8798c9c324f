// The PetStore on PostgreSQL: every read and write is one statement on a shared table, so
// every process sees every pet on its next request. No page version is offered: another
// process may add pets at any time, so this process's page cache could not be kept right.
import type { NewPet, PetStatus } from '../../core/index.js';
import { checkSeedInput, planBatch, type Op } from '../batch.js';
import { makePet, petJson } from '../codec.js';
import type { CreateOutcome, IdempotencyKey, ListQuery, PetStore, SeedPet, StoredPet } from '../contract.js';
import type { SqlRow } from './driver.js';
import { KeyedCreates, type KeyedCreateOptions } from './keyed-create.js';
import type { Pool } from './pool.js';
import { ID_SEQUENCE, KEYS_TABLE, PETS_TABLE } from './schema.js';

const COLUMNS = 'id, name, category_id, status';
const GET = `SELECT ${COLUMNS} FROM ${PETS_TABLE} WHERE id = $1`;
const LIST = `SELECT ${COLUMNS} FROM ${PETS_TABLE} WHERE id > $1 ORDER BY id LIMIT $2`;
const LIST_STATUS = `SELECT ${COLUMNS} FROM ${PETS_TABLE} WHERE status = $1 AND id > $2 ORDER BY id LIMIT $3`;
// One statement, committed on its own before the answer (postgres.js resolves at
// ReadyForQuery, after the implicit COMMIT): a 201 is sent only for a committed pet.
const INSERT = `INSERT INTO ${PETS_TABLE} (name, category_id, status) VALUES ($1, $2, $3) RETURNING id`;
// Creates of other processes wait while a seed plans its ids (they would take ids meanwhile).
const LOCK_FOR_SEED = `LOCK TABLE ${PETS_TABLE} IN SHARE ROW EXCLUSIVE MODE`;
const NEXT_ID = `SELECT CASE WHEN is_called THEN last_value + 1 ELSE last_value END AS next FROM ${ID_SEQUENCE}`;
// The text is cast in SQL: a parameter typed json would be JSON-encoded once more by the driver.
const INSERT_SEEDED = `INSERT INTO ${PETS_TABLE} (id, name, category_id, status) OVERRIDING SYSTEM VALUE
  SELECT id, name, category_id, status FROM json_to_recordset($1::text::json) AS p(id bigint, name text, category_id bigint, status text)`;
// Keeps the identity ahead of the explicit ids just stored.
const ADVANCE = `SELECT setval('${ID_SEQUENCE}', $1, true)`;
// The keys first: a keyed create locks the key table before the pets (keyed-create.ts), so
// this order cannot deadlock with one.
const RESET = `TRUNCATE ${KEYS_TABLE}, ${PETS_TABLE} RESTART IDENTITY`;
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
  readonly #keyed: KeyedCreates;

  constructor(pool: Pool, keys: KeyedCreateOptions) {
    this.#pool = pool;
    this.#keyed = new KeyedCreates(pool, keys);
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

  create(input: NewPet): Promise<StoredPet> {
    return this.#pool.query(INSERT, [input.name, input.categoryId, input.status ?? null]).then((rows) => {
      const pet = makePet(Number((rows[0] as SqlRow).id), input.name, input.categoryId, input.status);
      return { pet, json: petJson(pet) };
    });
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
   * One transaction: the table locked against creates, the ids planned exactly as the file
   * store plans them (same checks, same messages), the pets inserted, the identity moved past
   * the last one.
   */
  async seed(pets: ReadonlyArray<SeedPet>): Promise<StoredPet[]> {
    checkSeedInput(pets);
    return this.#pool.transaction(async (tx) => {
      await tx.unsafe(LOCK_FOR_SEED);
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
      return planned;
    });
  }

  async reset(): Promise<void> {
    await this.#pool.query(RESET, []);
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
