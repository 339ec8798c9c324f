// Idempotent creates on PostgreSQL (docs/store.md): the key and its pet are written by one statement (the
// group commit's, create-batch.ts), so one implicit transaction: no crash, timeout or outage
// can keep one without the other. The key table's primary key (scope, key) is what makes two
// processes racing on one key make one pet.
//
// A race between processes: both statements take the id lock in turn; the second's snapshot
// was taken before it got the lock, so it may not see the first's key, but its INSERT of the
// same key meets the committed row in the primary key: it inserts no pet and reads the key
// again with a fresh snapshot: a replay of the same pet (201, same body) or a mismatch (422).
// If the first rolled back, the second creates the pet. Within one process a repeat while the
// first is being written is answered 409 at once, as the file store answers it, without
// asking the database.
import type { Clock, Logger, NewPet } from '../../core/index.js';
import { describeError } from '../../core/index.js';
import { makePet, petJson } from '../codec.js';
import type { CreateOutcome, IdempotencyKey, StoredPet } from '../contract.js';
import type { GroupCommit } from './create-batch.js';
import type { SqlRow } from './driver.js';
import type { Pool } from './pool.js';
import { KEYS_TABLE } from './schema.js';

/** The live key, read with a fresh snapshot after CREATE met a key committed meanwhile. */
const READ = `SELECT pet_id, fingerprint FROM ${KEYS_TABLE} WHERE scope = $1 AND key = $2 AND created_at_ms > $3`;
type KeyRow = SqlRow;

/**
 * Up to $2 expired keys, oldest first. SKIP LOCKED: rows another process is sweeping or
 * taking over are left to it, so a sweep never waits for anyone (and no create waits on a
 * sweep for long: it holds only rows no live key is in).
 */
const SWEEP = `DELETE FROM ${KEYS_TABLE} WHERE (scope, key) IN (
    SELECT scope, key FROM ${KEYS_TABLE} WHERE created_at_ms <= $1 ORDER BY created_at_ms LIMIT $2 FOR UPDATE SKIP LOCKED
  ) RETURNING 1`;

/** A sweep after this many rows written to the key table by this process (see created()), and one when the store opens. */
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
  readonly #batch: GroupCommit;
  readonly #clock: Clock;
  readonly #retentionMs: number;
  readonly #logger: Logger;
  /** Keys of this process's creates still in their statement: a repeat meanwhile is 409. */
  readonly #pending = new Set<string>();
  #sinceSweep = 0;
  /** Sweeps started (a call while one runs joins it). */
  readonly stats = { sweeps: 0 };
  #sweeping: Promise<number> | undefined;

  constructor(pool: Pool, batch: GroupCommit, opts: KeyedCreateOptions) {
    this.#pool = pool;
    this.#batch = batch;
    this.#clock = opts.clock;
    this.#retentionMs = opts.retentionMs;
    this.#logger = opts.logger;
    // A batch without keys adds one row to the key table, its token: it counts as one.
    batch.onPlainBatch(() => this.created());
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
      const made = await this.#batch.submit(input, idem);
      if (made.kind === 'made') {
        this.created();
        return { kind: 'created', stored: stored(made.id, input) };
      }
      if (made.kind === 'found') return outcome({ pet_id: made.id, fingerprint: made.fingerprint }, input, idem);
      // Committed by another process after the statement's snapshot: read it afresh.
      const live = (await this.#pool.query(READ, [idem.scope, idem.key, this.#clock.now() - this.#retentionMs]))[0];
      if (live !== undefined) return outcome(live, input, idem);
      // Gone again (expired or reset in between): try once more.
    }
    return IN_FLIGHT;
  }

  /** Deletes up to SWEEP_BATCH expired keys; resolves with how many. One at a time. */
  sweep(): Promise<number> {
    if (this.#sweeping === undefined) this.stats.sweeps++;
    this.#sweeping ??= this.#pool.query(SWEEP, [this.#clock.now() - this.#retentionMs, SWEEP_BATCH])
      .then((rows) => rows.length, (err: unknown) => {
        // Nothing waits on a sweep (the creates were answered): the next one retries.
        this.#logger.log('warn', 'expired idempotency keys not swept', { err: describeError(err) });
        return 0;
      })
      .finally(() => { this.#sweeping = undefined; });
    return this.#sweeping;
  }

  /**
   * Counts rows written to the key table towards the next sweep: each keyed create (its key;
   * its batch's token rides along), and each batch without keys (its token, one row however
   * many creates it carried). So a sweep comes after every SWEEP_EVERY keyed creates, and
   * under a load without keys after every SWEEP_EVERY batches, not every SWEEP_EVERY creates.
   */
  created(): void {
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
function outcome(row: KeyRow, input: NewPet, idem: IdempotencyKey): CreateOutcome {
  if (row.fingerprint !== idem.fingerprint) return MISMATCH;
  return { kind: 'replayed', stored: stored(Number(row.pet_id), input) };
}
