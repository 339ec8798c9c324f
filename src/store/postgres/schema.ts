// The schema: created at start when absent, in one transaction under an advisory lock, so two
// processes starting at once do not both create it; its version is a row, and a database of
// a newer version (written by a newer petstore) refuses the start. An older one is upgraded
// in that same transaction, one step per version: all steps or none.
import type { Sql } from './driver.js';

/** The version this petstore writes and reads. */
export const SCHEMA_VERSION = 2;
export const PETS_TABLE = 'petstore_pets';
/** Idempotency keys (version 2), each written in the same statement as the pet it made. */
export const KEYS_TABLE = 'petstore_idempotency_keys';
export const VERSION_TABLE = 'petstore_schema';
/** The identity's sequence, as PostgreSQL names it. */
export const ID_SEQUENCE = 'petstore_pets_id_seq';
/** Ids stay safe integers in JavaScript: the identity stops at 2^53 - 1 (nextval fails past it). */
export const MAX_ID = Number.MAX_SAFE_INTEGER;
/**
 * Any constant; it names petstore's lock among the database's advisory locks. Taken at
 * transaction level and held to commit by the schema's creation and upgrades, and by every
 * statement that draws or plans ids (creates, seeds, reset): ids become visible in the order
 * they were given (see create-batch.ts).
 */
export const ORDER_LOCK = 0x7065_7473_746f; // "petsto"

const CREATE = [
  `CREATE TABLE IF NOT EXISTS ${PETS_TABLE} (
    id bigint GENERATED ALWAYS AS IDENTITY (MINVALUE 1 MAXVALUE ${MAX_ID} NO CYCLE) PRIMARY KEY,
    name text NOT NULL CHECK (name <> ''),
    category_id bigint NOT NULL CHECK (category_id BETWEEN ${-MAX_ID} AND ${MAX_ID}),
    status text CHECK (status IN ('available', 'pending', 'sold')),
    created_at timestamptz NOT NULL DEFAULT now()
  )`,
  // The status filter with its cursor (WHERE status = $1 AND id > $2 ORDER BY id): one index
  // range scan. Unfiltered pages use the primary key.
  `CREATE INDEX IF NOT EXISTS ${PETS_TABLE}_status_id ON ${PETS_TABLE} (status, id)`,
];

/**
 * From version n to n + 1: UPGRADES[n - 1]. Each step only adds, so a process of the older
 * version still running keeps working while a newer one upgrades the database.
 */
const UPGRADES: ReadonlyArray<readonly string[]> = [
  // 1 -> 2: idempotency keys. The primary key is the uniqueness the draft asks for: one pet
  // per (API key digest, key). created_at_ms is the store's clock (the embedder's, in tests),
  // not the server's, so that expiry follows the same clock as everything else.
  [
    `CREATE TABLE IF NOT EXISTS ${KEYS_TABLE} (
      scope text NOT NULL,
      key text NOT NULL CHECK (length(key) BETWEEN 1 AND 255),
      fingerprint text NOT NULL,
      pet_id bigint NOT NULL,
      created_at_ms bigint NOT NULL,
      PRIMARY KEY (scope, key)
    )`,
    // The sweep of expired keys: oldest first, one index range scan.
    `CREATE INDEX IF NOT EXISTS ${KEYS_TABLE}_created ON ${KEYS_TABLE} (created_at_ms)`,
  ],
];

/** What ensureSchema found and left. */
export interface SchemaState {
  readonly version: number;
  /** The version found, when it was older and has been upgraded; undefined for a new or current schema. */
  readonly upgradedFrom?: number;
  /** Indexes found missing and rebuilt. */
  readonly repaired?: readonly string[];
}

export class SchemaTooNewError extends Error {
  override readonly name: string = 'SchemaTooNewError';
}

/** The schema is damaged in a way that cannot be repaired without losing data: the start stops. */
export class SchemaDamagedError extends SchemaTooNewError {
  override readonly name = 'SchemaDamagedError';
}

/** What the current version must have: tables, the identity's sequence, and indexes. */
const TABLES = [PETS_TABLE, KEYS_TABLE];
/** Indexes that hold no data of their own: rebuilt when missing (and said so). */
const REBUILDABLE: ReadonlyArray<readonly [string, string]> = [
  [`${PETS_TABLE}_status_id`, CREATE[1] as string],
  [`${KEYS_TABLE}_created`, (UPGRADES[0] as readonly string[])[1] as string],
];
/** The primary keys: their uniqueness is what the data relies on; missing, the start stops. */
const KEYS = [`${PETS_TABLE}_pkey`, `${KEYS_TABLE}_pkey`];
const DAMAGED_HINT = 'restore the database from a backup, or drop the petstore_* tables to start empty';

/** Creates the schema when absent, upgrades an older one, refuses a newer one. */
export async function ensureSchema(tx: Sql): Promise<SchemaState> {
  await tx.unsafe(`SELECT pg_advisory_xact_lock(${ORDER_LOCK})`);
  await tx.unsafe(`CREATE TABLE IF NOT EXISTS ${VERSION_TABLE} (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    version integer NOT NULL
  )`);
  const rows = await tx.unsafe(`SELECT version FROM ${VERSION_TABLE}`);
  const found = rows[0]?.version;
  if (found === undefined) {
    for (const statement of CREATE) await tx.unsafe(statement);
    await upgrade(tx, 1);
    await tx.unsafe(`INSERT INTO ${VERSION_TABLE} (version) VALUES (${SCHEMA_VERSION})`);
    return { version: SCHEMA_VERSION };
  }
  const version = Number(found);
  if (!Number.isInteger(version) || version < 1) {
    throw new SchemaDamagedError(`its petstore schema version row says ${String(found)}, which no petstore release writes (versions start at 1): the schema is damaged; ${DAMAGED_HINT}`);
  }
  if (version > SCHEMA_VERSION) {
    throw new SchemaTooNewError(
      `its petstore schema is version ${version}, newer than this petstore's (${SCHEMA_VERSION}): run a petstore release that knows version ${version}`,
    );
  }
  if (version !== SCHEMA_VERSION) {
    await check(tx, version, [PETS_TABLE], [`${PETS_TABLE}_pkey`]);
    await upgrade(tx, version);
    await tx.unsafe(`UPDATE ${VERSION_TABLE} SET version = ${SCHEMA_VERSION}`);
  }
  const repaired = await check(tx, SCHEMA_VERSION, TABLES, KEYS);
  return { version: SCHEMA_VERSION, ...(version !== SCHEMA_VERSION ? { upgradedFrom: version } : {}), ...(repaired.length > 0 ? { repaired } : {}) };
}

/**
 * Checks that `version`'s tables, identity and primary keys are there (else SchemaDamagedError
 * naming what is missing) and rebuilds missing plain indexes; resolves with their names.
 */
async function check(tx: Sql, version: number, tables: readonly string[], keys: readonly string[]): Promise<string[]> {
  const present = new Set((await tx.unsafe(
    `SELECT relname FROM pg_class WHERE relnamespace = current_schema()::regnamespace AND relname LIKE 'petstore\\_%'`,
  )).map((r) => r.relname as string));
  for (const name of [...tables, ID_SEQUENCE, ...keys]) {
    if (!present.has(name)) {
      const what = name === ID_SEQUENCE ? 'the id sequence' : keys.includes(name) ? 'the primary key index' : 'the table';
      throw new SchemaDamagedError(`its petstore schema is version ${version} but ${what} ${name} is missing: the schema is damaged; ${DAMAGED_HINT}`);
    }
  }
  const repaired: string[] = [];
  for (const [index, statement] of REBUILDABLE) {
    if (present.has(index) || !tables.includes(index.startsWith(KEYS_TABLE) ? KEYS_TABLE : PETS_TABLE)) continue;
    await tx.unsafe(statement);
    repaired.push(index);
  }
  return repaired;
}

/** Runs the steps from version `from` to SCHEMA_VERSION. */
async function upgrade(tx: Sql, from: number): Promise<void> {
  for (let v = from; v < SCHEMA_VERSION; v++) {
    for (const statement of UPGRADES[v - 1] ?? []) await tx.unsafe(statement);
  }
}
