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
/** Any constant; it names petstore's schema lock among the database's advisory locks. */
const SCHEMA_LOCK = 0x7065_7473_746f; // "petsto"

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
}

export class SchemaTooNewError extends Error {
  override readonly name = 'SchemaTooNewError';
}

/** Creates the schema when absent, upgrades an older one, refuses a newer one. */
export async function ensureSchema(tx: Sql): Promise<SchemaState> {
  await tx.unsafe(`SELECT pg_advisory_xact_lock(${SCHEMA_LOCK})`);
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
  if (version > SCHEMA_VERSION) {
    throw new SchemaTooNewError(
      `its petstore schema is version ${version}, newer than this petstore's (${SCHEMA_VERSION}): run a petstore release that knows version ${version}`,
    );
  }
  if (version === SCHEMA_VERSION) return { version };
  await upgrade(tx, version);
  await tx.unsafe(`UPDATE ${VERSION_TABLE} SET version = ${SCHEMA_VERSION}`);
  return { version: SCHEMA_VERSION, upgradedFrom: version };
}

/** Runs the steps from version `from` to SCHEMA_VERSION. */
async function upgrade(tx: Sql, from: number): Promise<void> {
  for (let v = from; v < SCHEMA_VERSION; v++) {
    for (const statement of UPGRADES[v - 1] ?? []) await tx.unsafe(statement);
  }
}
