// The schema: created at start when absent, in one transaction under an advisory lock, so two
// processes starting at once do not both create it; its version is a row, and a database of
// a newer version (written by a newer petstore) refuses the start.
import type { Sql } from './driver.js';

/** The version this petstore writes and reads. */
export const SCHEMA_VERSION = 1;
export const PETS_TABLE = 'petstore_pets';
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

export class SchemaTooNewError extends Error {
  override readonly name = 'SchemaTooNewError';
}

/** Creates the schema when absent and checks its version; resolves with that version. */
export async function ensureSchema(tx: Sql): Promise<number> {
  await tx.unsafe(`SELECT pg_advisory_xact_lock(${SCHEMA_LOCK})`);
  await tx.unsafe(`CREATE TABLE IF NOT EXISTS ${VERSION_TABLE} (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    version integer NOT NULL
  )`);
  const rows = await tx.unsafe(`SELECT version FROM ${VERSION_TABLE}`);
  const found = rows[0]?.version;
  if (found === undefined) {
    for (const statement of CREATE) await tx.unsafe(statement);
    await tx.unsafe(`INSERT INTO ${VERSION_TABLE} (version) VALUES (${SCHEMA_VERSION})`);
    return SCHEMA_VERSION;
  }
  const version = Number(found);
  if (version > SCHEMA_VERSION) {
    throw new SchemaTooNewError(
      `its petstore schema is version ${version}, newer than this petstore's (${SCHEMA_VERSION}): run a petstore release that knows version ${version}`,
    );
  }
  return version;
}
