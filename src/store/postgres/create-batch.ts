// Creates are group-committed: every create (with or without an Idempotency-Key) ready in
// the same turn of the event loop goes to PostgreSQL in one statement, so one implicit
// transaction and one commit (one WAL flush) for all of them, and each is answered only once
// that statement, its commit included, has been answered.
//
// Ids become visible in the order they were given. The statement first takes petstore's
// transaction-level advisory lock (the same key guards the schema, seeds and reset) and only
// then draws its ids; the lock is held to its commit, and PostgreSQL makes a transaction
// visible before it releases its locks. So, across any number of processes:
//
//   INVARIANT: once id N is visible, every id below N is either visible or will never exist.
//
// A page that is full can therefore never gain a lower id later: readers may cache full
// pages (see read-cache.ts), and a client following `next` links misses nothing.
//
// Each statement also stores a batch token (a row of the key table under the empty scope,
// which no API key digest can be) naming the ids it gave. When the answer to a statement is
// lost (the connection cut after it was sent, or no answer at all), the token tells what
// happened: looked up under the same lock, so once the lost statement has ended; and if it
// is absent, the lookup writes it, so that the lost statement, should it still arrive, fails
// on it and commits nothing. Only when the lookup cannot be made either is a create's fate
// unknown (CreateOutcomeUnknownError).
import { randomBytes } from 'node:crypto';
import { describeError, type Clock, type Logger, type NewPet } from '../../core/index.js';
import { makePet, petTail } from '../codec.js';
import type { IdempotencyKey, StoredPet } from '../contract.js';
import { CreateOutcomeUnknownError, StoreUnreachableError } from '../errors.js';
import type { SqlRow } from './driver.js';
import type { Pool } from './pool.js';
import { ID_SEQUENCE, KEYS_TABLE, ORDER_LOCK, PETS_TABLE } from './schema.js';

/** Creates in one statement at most. */
export const MAX_BATCH = 256;
/**
 * Batches of one process in flight at once, by default: one running, one waiting for the lock
 * behind it. Every process of a service takes the same id lock and holds it through its commit
 * (the WAL flush), so commits of all processes run one after the other, and each carries only
 * the creates of its own batch: the more batches wait at the lock, the fewer creates each
 * flush carries. A process alone keeps a second batch queued behind the running one (the lock
 * passes to it at once, with no round trip in between); with several processes (--workers),
 * each keeps one, gathering the next while it runs, and the others' batches fill the gap.
 *
 * With one batch in flight, the next one is also filled before it goes: once a batch is
 * answered, its creators send their next creates within moments, and a batch sent on the
 * first turn with any create would carry only the first of them, leaving the rest to wait a
 * whole commit (of every process) for the one after: the creates would settle into two
 * alternating batches of half the size, each paying a flush. So the next batch goes once as
 * many creates wait as the last one carried, or GATHER_MS after that batch was answered,
 * whichever comes first (a load that shrank costs that wait once).
 */
export const DEFAULT_BATCHES_IN_FLIGHT = 2;
/** How long, at most, a process with one batch in flight gathers the next after an answer. */
export const GATHER_MS = 2;
/** The scope of batch tokens in the key table; API keys' scopes are 64 hex digits. */
export const TOKEN_SCOPE = '';
/** A token the lookup wrote: its batch never committed, and now never will. */
const VOID = 'void';

/**
 * $1: the creates as JSON text (ord from 1; scope, key and fingerprint null without an
 * Idempotency-Key; the text is cast in SQL: a parameter typed json would be encoded again),
 * $2 now, $3 the oldest time still live minus one, $4 the batch token.
 * `ordered`: the lock, before any id is drawn (fresh joins it, so no nextval runs before it).
 * `found`: live keys (a replay takes no id). `claim`: the keys of fresh creates; on a conflict
 * it takes the row over only if expired, else claims nothing (a key committed by another
 * process after this statement's snapshot: that create is read again, see keyed-create.ts).
 * `pet`: the pets of claimed keys and of unkeyed creates. Answer: one row per create that
 * made a pet (ord, its id) or met a live key (ord, pet, fingerprint).
 */
const BATCH = `WITH ordered AS MATERIALIZED (
    SELECT 1 AS locked FROM (SELECT pg_advisory_xact_lock(${ORDER_LOCK})) AS l
  ), input AS (
    SELECT * FROM json_to_recordset($1::text::json)
      AS u(ord bigint, name text, category_id bigint, status text, scope text, key text, fingerprint text)
  ), found AS (
    SELECT i.ord, k.pet_id, k.fingerprint FROM input i
      JOIN ${KEYS_TABLE} k ON k.scope = i.scope AND k.key = i.key AND k.created_at_ms > $3::bigint
  ), fresh AS MATERIALIZED (
    SELECT i.ord, i.name, i.category_id, i.status, i.scope, i.key, i.fingerprint, nextval('${ID_SEQUENCE}') AS id
      FROM (SELECT * FROM input ORDER BY ord) AS i CROSS JOIN ordered
      WHERE NOT EXISTS (SELECT 1 FROM found f WHERE f.ord = i.ord)
  ), claim AS (
    INSERT INTO ${KEYS_TABLE} AS k (scope, key, fingerprint, created_at_ms, pet_id)
    SELECT scope, key, fingerprint, $2::bigint, id FROM fresh WHERE scope IS NOT NULL
    ON CONFLICT (scope, key) DO UPDATE
      SET fingerprint = EXCLUDED.fingerprint, created_at_ms = EXCLUDED.created_at_ms, pet_id = EXCLUDED.pet_id
      WHERE k.created_at_ms <= $3::bigint
    RETURNING pet_id
  ), pet AS (
    INSERT INTO ${PETS_TABLE} (id, name, category_id, status) OVERRIDING SYSTEM VALUE
    SELECT id, name, category_id, status FROM fresh WHERE scope IS NULL OR id IN (SELECT pet_id FROM claim)
    RETURNING id
  ), made AS MATERIALIZED (
    SELECT f.ord, p.id FROM pet p JOIN fresh f ON f.id = p.id
  ), token AS (
    INSERT INTO ${KEYS_TABLE} (scope, key, fingerprint, created_at_ms, pet_id)
    SELECT '${TOKEN_SCOPE}', $4::text, coalesce(string_agg(ord || ':' || id, ',' ORDER BY ord), ''), $2::bigint, coalesce(min(id), 0) FROM made
  )
  SELECT ord, id AS pet_id, NULL::text AS fingerprint FROM made
  UNION ALL
  SELECT ord, pet_id, fingerprint FROM found`;

/**
 * The same statement for a batch in which no create has an Idempotency-Key (the common case):
 * no key to look up or claim, so every create makes a pet. $1: the creates as JSON text
 * (ord from 1, then name, categoryId and status exactly as the pet's own JSON has them, status
 * left out when absent: the same text, after the id, answers the create), $2 now, $3 the batch
 * token. Data-modifying CTEs run to completion whether read or not, so `pet` inserts every
 * row of `fresh`, or the statement fails and commits nothing. Answer: one row, the ids in
 * the order of the creates as one text ("101,102,..."): one row to read instead of one per create.
 */
const PLAIN_BATCH = `WITH ordered AS MATERIALIZED (
    SELECT 1 AS locked FROM (SELECT pg_advisory_xact_lock(${ORDER_LOCK})) AS l
  ), fresh AS MATERIALIZED (
    SELECT i.ord, i.name, i."categoryId" AS category_id, i.status, nextval('${ID_SEQUENCE}') AS id
      FROM (SELECT * FROM json_to_recordset($1::text::json) AS u(ord bigint, name text, "categoryId" bigint, status text) ORDER BY ord) AS i
      CROSS JOIN ordered
  ), pet AS (
    INSERT INTO ${PETS_TABLE} (id, name, category_id, status) OVERRIDING SYSTEM VALUE
    SELECT id, name, category_id, status FROM fresh
  ), made AS MATERIALIZED (
    SELECT string_agg(id::text, ',' ORDER BY ord) AS ids, string_agg(ord || ':' || id, ',' ORDER BY ord) AS pairs, min(id) AS first
      FROM fresh
  ), token AS (
    INSERT INTO ${KEYS_TABLE} (scope, key, fingerprint, created_at_ms, pet_id)
    SELECT '${TOKEN_SCOPE}', $3::text, pairs, $2::bigint, first FROM made
  )
  SELECT ids FROM made`;

/** After a lost answer, under the lock: void the token if absent, then read it. */
const VOID_TOKEN = `INSERT INTO ${KEYS_TABLE} (scope, key, fingerprint, created_at_ms, pet_id)
  VALUES ('${TOKEN_SCOPE}', $1, '${VOID}', $2, 0) ON CONFLICT (scope, key) DO NOTHING`;
const READ_TOKEN = `SELECT fingerprint FROM ${KEYS_TABLE} WHERE scope = '${TOKEN_SCOPE}' AND key = $1`;
const LOCK = `SELECT pg_advisory_xact_lock(${ORDER_LOCK})`;

/** What one create came to in its batch. */
export type BatchResult =
  /** A pet was made with this id (and the key claimed, if any). */
  | { readonly kind: 'made'; readonly id: number }
  /** The key was live already: its pet and fingerprint. */
  | { readonly kind: 'found'; readonly id: number; readonly fingerprint: string }
  /** Nothing was made: the key was committed by another process meanwhile (read it again). */
  | { readonly kind: 'none' };

/**
 * Told of every pet a create without a key made, before that create is answered (the read
 * cache keeps them). `epoch()` is read when a batch is handed to the pool and given back with
 * each pet of that batch: a statement handed over after a reset or seed was known here runs
 * after it committed.
 */
export interface CreateWatch {
  epoch(): number;
  made(stored: StoredPet, epoch: number): void;
}

interface Pending {
  readonly input: NewPet;
  readonly idem: IdempotencyKey | undefined;
  /** Answered with the stored pet (create()) rather than with a BatchResult (submit()). */
  readonly stored: boolean;
  /** Set by plainJson: the create's members after its id as JSON text, for the batch and the answer. */
  tail: string | undefined;
  readonly resolve: (r: BatchResult | StoredPet) => void;
  readonly reject: (err: unknown) => void;
  /** Sent again once after its batch was found not committed. */
  retried: boolean;
}

export interface GroupCommitOptions {
  readonly clock: Clock;
  readonly retentionMs: number;
  readonly logger: Logger;
  /** Batches of this process in flight at once (DEFAULT_BATCHES_IN_FLIGHT; 1 with --workers). */
  readonly batchesInFlight?: number;
  /** With one batch in flight: the most ms spent filling the next after an answer (GATHER_MS). */
  readonly gatherMs?: number;
}

export class GroupCommit {
  readonly #pool: Pool;
  readonly #opts: GroupCommitOptions;
  #waiting: Pending[] = [];
  #inFlight = 0;
  #scheduled = false;
  readonly #maxInFlight: number;
  readonly #gatherMs: number;
  /** With one batch in flight: creates to wait for before the next batch goes (0: none). */
  #fillTo = 0;
  #gatherTimer: NodeJS.Timeout | undefined = undefined;
  /** Batch tokens: this process's random prefix, and how many it has given. */
  readonly #tokenPrefix = `batch:${randomBytes(12).toString('hex')}:`;
  #tokens = 0;
  /** Called for each batch without keys committed (keyed-create.ts counts it towards the next sweep). */
  #onPlainBatch: (() => void) | undefined;
  #watch: CreateWatch | undefined;
  /** Statements sent, creates in them; lost answers found out, and left unknown; most batches in flight at once. */
  readonly stats = { batches: 0, creates: 0, resolved: 0, unknown: 0, peakInFlight: 0 };

  constructor(pool: Pool, opts: GroupCommitOptions) {
    this.#pool = pool;
    this.#opts = opts;
    this.#maxInFlight = Math.max(1, opts.batchesInFlight ?? DEFAULT_BATCHES_IN_FLIGHT);
    this.#gatherMs = opts.gatherMs ?? GATHER_MS;
  }

  /** `hook` runs once for every batch without keys committed: its token is the one row it adds to the key table. */
  onPlainBatch(hook: () => void): void {
    this.#onPlainBatch = hook;
  }

  /** `watch` is told of every pet create() made (one watch: the read cache's). */
  watch(watch: CreateWatch): void {
    this.#watch = watch;
  }

  /** A create without a key: resolves with the pet once its statement, commit included, was answered. */
  create(input: NewPet): Promise<StoredPet> {
    return new Promise((resolve, reject) => {
      this.#waiting.push({ input, idem: undefined, stored: true, tail: undefined, resolve: resolve as Pending['resolve'], reject, retried: false });
      this.#schedule();
    });
  }

  submit(input: NewPet, idem?: IdempotencyKey): Promise<BatchResult> {
    return new Promise((resolve, reject) => {
      this.#waiting.push({ input, idem, stored: false, tail: undefined, resolve: resolve as Pending['resolve'], reject, retried: false });
      this.#schedule();
    });
  }

  /** `p` made a pet with this id. */
  #made(p: Pending, id: number, epoch: number): void {
    if (!p.stored) {
      p.resolve({ kind: 'made', id });
      return;
    }
    const { name, categoryId, status } = p.input;
    // petJson(pet), with the text after the id built once for the batch and the answer.
    const stored: StoredPet = { pet: makePet(id, name, categoryId, status), json: `{"id":${id},${p.tail ?? petTail(p.input)}` };
    this.#watch?.made(stored, epoch);
    p.resolve(stored);
  }

  #schedule(): void {
    if (this.#scheduled || this.#inFlight >= this.#maxInFlight || this.#waiting.length === 0) return;
    if (this.#waiting.length < this.#fillTo) {
      // Filling the next batch (see DEFAULT_BATCHES_IN_FLIGHT): until enough wait, or time is up.
      this.#gatherTimer ??= setTimeout(() => {
        this.#gatherTimer = undefined;
        this.#fillTo = 0;
        this.#schedule();
      }, this.#gatherMs);
      return;
    }
    this.#fillTo = 0;
    clearTimeout(this.#gatherTimer);
    this.#gatherTimer = undefined;
    this.#scheduled = true;
    // Every create that arrives in this turn of the loop joins the batch.
    setImmediate(() => {
      this.#scheduled = false;
      while (this.#inFlight < this.#maxInFlight && this.#waiting.length > 0) {
        const batch = this.#waiting.length <= MAX_BATCH ? this.#waiting : this.#waiting.slice(0, MAX_BATCH);
        this.#waiting = this.#waiting.length <= MAX_BATCH ? [] : this.#waiting.slice(MAX_BATCH);
        this.#inFlight++;
        if (this.#inFlight > this.stats.peakInFlight) this.stats.peakInFlight = this.#inFlight;
        void this.#send(batch).finally(() => {
          this.#inFlight--;
          if (this.#maxInFlight === 1) this.#fillTo = Math.min(batch.length, MAX_BATCH);
          this.#schedule();
        });
      }
    });
  }

  async #send(batch: Pending[]): Promise<void> {
    const now = this.#opts.clock.now();
    // Unique across processes and restarts: a random prefix per process, then a counter.
    const token = `${this.#tokenPrefix}${(++this.#tokens).toString(36)}`;
    this.stats.batches++;
    this.stats.creates += batch.length;
    const plain = batch.every((p) => p.idem === undefined);
    const epoch = this.#watch?.epoch() ?? 0;
    let rows: SqlRow[];
    try {
      rows = plain
        ? await this.#pool.query(PLAIN_BATCH, [plainJson(batch), now, token])
        : await this.#pool.query(BATCH, [keyedJson(batch), now, now - this.#opts.retentionMs, token]);
    } catch (err) {
      if (!(err instanceof StoreUnreachableError) || neverSent(err)) {
        for (const p of batch) p.reject(err);
        return;
      }
      await this.#findOut(batch, token, now, epoch, err);
      return;
    }
    if (plain) {
      // Every create made a pet (or the statement failed as a whole): their ids, in order.
      const ids = String(rows[0]?.ids ?? '').split(',');
      if (ids.length !== batch.length) {
        const err = new Error(`a batch of ${batch.length} creates was answered with ${ids.length} ids`);
        for (const p of batch) p.reject(err);
        return;
      }
      for (let i = 0; i < batch.length; i++) this.#made(batch[i] as Pending, Number(ids[i]), epoch);
      this.#onPlainBatch?.();
      return;
    }
    const byOrd = new Map<number, SqlRow>();
    for (const row of rows) byOrd.set(Number(row.ord), row);
    batch.forEach((p, i) => {
      const r = result(byOrd.get(i + 1));
      if (!p.stored) p.resolve(r);
      else if (r.kind === 'made') this.#made(p, r.id, epoch);
      else p.reject(new Error(`a create without a key was not made (${r.kind})`));
    });
  }

  /**
   * The answer to the batch was lost: find out under the lock whether it committed. The
   * creates it made are answered with their pets; if it did not commit (and now never
   * will), its creates are sent once more; if we cannot find out, their fate is unknown.
   */
  async #findOut(batch: Pending[], token: string, now: number, epoch: number, lost: unknown): Promise<void> {
    let written: string | undefined;
    try {
      written = await this.#pool.transaction(async (tx) => {
        await tx.unsafe(LOCK);
        await tx.unsafe(VOID_TOKEN, [token, now], { prepare: true });
        return (await tx.unsafe(READ_TOKEN, [token], { prepare: true }))[0]?.fingerprint as string | undefined;
      });
    } catch (err) {
      this.stats.unknown += batch.length;
      this.#opts.logger.log('error', 'creates of unknown outcome: the connection was lost after they were sent, and the database could not be asked', {
        creates: batch.length, keyed: batch.filter((p) => p.idem !== undefined).length, err: describeError(lost), lookup: describeError(err),
      });
      const unknown = new CreateOutcomeUnknownError(`the outcome of the create is unknown: ${describeError(lost)}`);
      for (const p of batch) p.reject(unknown);
      return;
    }
    this.stats.resolved += batch.length;
    if (written === undefined || written === VOID) {
      // Not committed, and now it never will be: nothing was made; send them once more.
      for (const p of batch) {
        if (p.retried) {
          p.reject(lost);
        } else {
          p.retried = true;
          this.#waiting.push(p);
        }
      }
      this.#schedule();
      return;
    }
    const made = new Map<number, number>();
    for (const pair of written === '' ? [] : written.split(',')) {
      const [ord, id] = pair.split(':');
      made.set(Number(ord), Number(id));
    }
    const again: Pending[] = [];
    batch.forEach((p, i) => {
      const id = made.get(i + 1);
      if (id !== undefined) this.#made(p, id, epoch);
      // A replay or a key taken meanwhile: no write was lost; ask again.
      else again.push(p);
    });
    for (const p of again) this.#waiting.push(p);
    this.#schedule();
  }
}

/** The creates of a batch without keys as JSON text for PLAIN_BATCH (built as text: no object per create). */
function plainJson(batch: readonly Pending[]): string {
  let out = '[';
  for (let i = 0; i < batch.length; i++) {
    const p = batch[i] as Pending;
    p.tail ??= petTail(p.input);
    out += `${i === 0 ? '{"ord":' : ',{"ord":'}${i + 1},${p.tail}`;
  }
  return `${out}]`;
}

/** The creates of a batch with keys as JSON text for BATCH. */
function keyedJson(batch: readonly Pending[]): string {
  return JSON.stringify(batch.map((p, i) => ({
    ord: i + 1, name: p.input.name, category_id: p.input.categoryId, status: p.input.status ?? null,
    scope: p.idem?.scope ?? null, key: p.idem?.key ?? null, fingerprint: p.idem?.fingerprint ?? null,
  })));
}

/** A failure before the statement could have reached the server: nothing was sent. */
function neverSent(err: StoreUnreachableError): boolean {
  return /ECONNREFUSED|ENOTFOUND|EAI_AGAIN|CONNECT_TIMEOUT|EHOSTUNREACH|ENETUNREACH|the store is closed/.test(err.message);
}

function result(row: SqlRow | undefined): BatchResult {
  if (row === undefined) return { kind: 'none' };
  if (row.fingerprint === null) return { kind: 'made', id: Number(row.pet_id) };
  return { kind: 'found', id: Number(row.pet_id), fingerprint: row.fingerprint as string };
}
