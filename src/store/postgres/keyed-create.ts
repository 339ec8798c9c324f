// Idempotent creates on PostgreSQL (docs/store.md): the key and its pet are written by one
// statement, so one implicit transaction: no crash, timeout or outage can keep one without
// the other. The key table's primary key (scope, key) is what makes two processes racing on
// one key make one pet.
//
// A race between processes: the second statement's INSERT of the same key finds the first's
// uncommitted row in the primary key and waits for that transaction (one statement, so it
// ends with the statement) to end. If it commits, the second sees the conflict, inserts no
// pet and reads the key again with a fresh snapshot: a replay of the same pet (201, same
// body) or a mismatch (422). If it rolls back, the second goes on and creates the pet. Within
// one process a repeat while the first is being written is answered 409 at once, as the file
// store answers it, without asking the database.
import type { Clock, Logger, NewPet } from '../../core/index.js';
import { describeError } from '../../core/index.js';
import { makePet, petJson } from '../codec.js';
import type { CreateOutcome, IdempotencyKey, StoredPet } from '../contract.js';
import type { SqlRow } from './driver.js';
import type { Pool } from './pool.js';
import { ID_SEQUENCE, KEYS_TABLE, PETS_TABLE } from './schema.js';

/**
 * One round trip for a first use and for a replay. `found`: the key, if live ($5 is the
 * oldest time still live minus one). `claim`: the key with the next id, only when none was
 * found (so a replay takes no id); on a conflict it takes the row over only if that row has
 * expired meanwhile, else inserts nothing. `pet`: the pet, only if the key was claimed, with
 * the id the key took. The answer is one row: the new pet's id (fingerprint null), or the
 * live key's pet and fingerprint; none when another transaction committed the key after this
 * statement's snapshot (see READ).
 */
const CREATE = `WITH found AS (
    SELECT pet_id, fingerprint FROM ${KEYS_TABLE} WHERE scope = $1::text AND key = $2::text AND created_at_ms > $5::bigint
  ), claim AS (
    INSERT INTO ${KEYS_TABLE} AS k (scope, key, fingerprint, created_at_ms, pet_id)
    SELECT $1::text, $2::text, $3::text, $4::bigint, nextval('${ID_SEQUENCE}') WHERE NOT EXISTS (SELECT 1 FROM found)
    ON CONFLICT (scope, key) DO UPDATE
      SET fingerprint = EXCLUDED.fingerprint, created_at_ms = EXCLUDED.created_at_ms, pet_id = EXCLUDED.pet_id
      WHERE k.created_at_ms <= $5::bigint
    RETURNING pet_id
  ), pet AS (
    INSERT INTO ${PETS_TABLE} (id, name, category_id, status) OVERRIDING SYSTEM VALUE
    SELECT pet_id, $6::text, $7::bigint, $8::text FROM claim
    RETURNING id
  )
  SELECT id AS pet_id, NULL::text AS fingerprint FROM pet
  UNION ALL
  SELECT pet_id, fingerprint FROM found`;

/** The live key, read with a fresh snapshot after CREATE met a key committed meanwhile. */
const READ = `SELECT pet_id, fingerprint FROM ${KEYS_TABLE} WHERE scope = $1 AND key = $2 AND created_at_ms > $3`;

/**
 * Up to $2 expired keys, oldest first. SKIP LOCKED: rows another process is sweeping or
 * taking over are left to it, so a sweep never waits for anyone (and no create waits on a
 * sweep for long: it holds only rows no live key is in).
 */
const SWEEP = `DELETE FROM ${KEYS_TABLE} WHERE (scope, key) IN (
    SELECT scope, key FROM ${KEYS_TABLE} WHERE created_at_ms <= $1 ORDER BY created_at_ms LIMIT $2 FOR UPDATE SKIP LOCKED
  ) RETURNING 1`;

/** A sweep after this many keys created by this process, and one when the store opens. */
export const SWEEP_EVERY = 100;
/** Keys deleted by one sweep at most: ten times SWEEP_EVERY, so expired keys never pile up. */
export const SWEEP_BATCH = 1000;
/** CREATE and READ rounds before a key that keeps vanishing is answered as in flight. */
const ATTEMPTS = 3;

const MISMATCH: CreateOutcome = { kind: 'mismatch' };
const IN_FLIGHT: CreateOutcome = { kind: 'in_flight' };

export interface KeyedCreateOptions {
  readonly clock: Clock;
  readonly retentionMs: number;
  readonly logger: Logger;
}

export class KeyedCreates {
  readonly #pool: Pool;
  readonly #clock: Clock;
  readonly #retentionMs: number;
  readonly #logger: Logger;
  /** Keys of this process's creates still in their statement: a repeat meanwhile is 409. */
  readonly #pending = new Set<string>();
  #sinceSweep = 0;
  #sweeping: Promise<number> | undefined;

  constructor(pool: Pool, opts: KeyedCreateOptions) {
    this.#pool = pool;
    this.#clock = opts.clock;
    this.#retentionMs = opts.retentionMs;
    this.#logger = opts.logger;
  }

  async create(input: NewPet, idem: IdempotencyKey): Promise<CreateOutcome> {
    const slot = `${idem.scope}\n${idem.key}`;
    if (this.#pending.has(slot)) return IN_FLIGHT;
    this.#pending.add(slot);
    try {
      return await this.#create(input, idem);
    } finally {
      this.#pending.delete(slot);
    }
  }

  async #create(input: NewPet, idem: IdempotencyKey): Promise<CreateOutcome> {
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const now = this.#clock.now();
      const oldest = now - this.#retentionMs; // live: created_at_ms + retention > now
      const rows = await this.#pool.query(CREATE, [
        idem.scope, idem.key, idem.fingerprint, now, oldest, input.name, input.categoryId, input.status ?? null,
      ]);
      const row = rows[0];
      if (row !== undefined && row.fingerprint === null) {
        this.#created();
        return { kind: 'created', stored: stored(Number(row.pet_id), input) };
      }
      // Live before this statement began (row), or committed by another while it waited.
      const live = row ?? (await this.#pool.query(READ, [idem.scope, idem.key, oldest]))[0];
      if (live !== undefined) return outcome(live, input, idem);
      // Gone again (expired or reset in between): try once more.
    }
    return IN_FLIGHT;
  }

  /** Deletes up to SWEEP_BATCH expired keys; resolves with how many. One at a time. */
  sweep(): Promise<number> {
    this.#sweeping ??= this.#pool.query(SWEEP, [this.#clock.now() - this.#retentionMs, SWEEP_BATCH])
      .then((rows) => rows.length, (err: unknown) => {
        // Nothing waits on a sweep (the creates were answered): the next one retries.
        this.#logger.log('warn', 'expired idempotency keys not swept', { err: describeError(err) });
        return 0;
      })
      .finally(() => { this.#sweeping = undefined; });
    return this.#sweeping;
  }

  #created(): void {
    if (++this.#sinceSweep < SWEEP_EVERY) return;
    this.#sinceSweep = 0;
    void this.sweep();
  }
}

/** The pet a key made: its id, and the payload whose fingerprint it carries (pets are immutable). */
function stored(id: number, input: NewPet): StoredPet {
  const pet = makePet(id, input.name, input.categoryId, input.status);
  return { pet, json: petJson(pet) };
}

/** A live key: the same fingerprint is the same validated NewPet, so the pet is this payload's. */
function outcome(row: SqlRow, input: NewPet, idem: IdempotencyKey): CreateOutcome {
  if (row.fingerprint !== idem.fingerprint) return MISMATCH;
  return { kind: 'replayed', stored: stored(Number(row.pet_id), input) };
}
