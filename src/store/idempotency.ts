// Idempotency keys of the in-process stores: the table of live keys (memory), how a key is
// written beside its pet (one journal line, one snapshot line), and the checks applied when
// reading it back. The key travels with the pet, so no crash can keep one without the other.
import { createHash } from 'node:crypto';
import { PartedMap, isIdempotencyKey } from '../core/index.js';
import type { NewPet, Pet } from '../core/index.js';
import type { IdempotencyKey } from './contract.js';

/**
 * The fingerprint of a validated NewPet: SHA-256 (base64url) of its canonical JSON, the
 * fields in the order name, categoryId, status. Two payloads that validate to the same
 * NewPet (whatever their key order, spacing or ignored fields) have the same fingerprint.
 */
export function newPetFingerprint(pet: Readonly<NewPet>): string {
  const head = `{"name":${JSON.stringify(pet.name)},"categoryId":${pet.categoryId}`;
  const text = pet.status === undefined ? `${head}}` : `${head},"status":"${pet.status}"}`;
  return createHash('sha256').update(text).digest('base64url');
}

/** A key as a journal or snapshot line holds it (`"idem": {...}` beside the pet's fields). */
export interface KeyRecord {
  readonly scope: string;
  readonly key: string;
  readonly fp: string;
  readonly at: number;
}

/** A record read from disk that carries a key: the pet and its key. */
export class KeyedPet {
  constructor(readonly pet: Pet, readonly idem: KeyRecord) {}
}

/**
 * Live keys as rows: a key's table name (its slot string) -> its row, and per row the pet
 * id and the time (wall-clock ms) in typed arrays. An object per key (as this once was)
 * made a restore of a hundred thousand keys a hundred thousand small objects that all
 * survive (two, with the boxed time), and each young-generation collection copied them: a
 * pause of several ms. Typed arrays that large are never copied by that collector. The
 * index's order is the order keys were added (see KeyTable); a row freed by a deletion is
 * reused by a later key, so a walk reads a row while its key is still in the index.
 */
export class KeyRows {
  /**
   * Slot string -> row, in order of addition, in parts: no large rehash in one step (a
   * restore builds a table of all the saved keys).
   */
  readonly index = new PartedMap<string, number>(true);
  ids: Float64Array;
  ats: Float64Array;
  /** Rows handed out so far. */
  #used = 0;
  /** Rows freed, to be reused. */
  readonly #free: number[] = [];

  constructor(rows = 16) {
    this.ids = new Float64Array(rows);
    this.ats = new Float64Array(rows);
  }

  get size(): number {
    return this.index.size;
  }

  /** Adds `slot` (not in the index) as the last key. */
  push(slot: string, id: number, at: number): void {
    let row = this.#free.pop();
    if (row === undefined) {
      row = this.#used++;
      if (row >= this.ids.length) this.#grow();
    }
    this.ids[row] = id;
    this.ats[row] = at;
    this.index.add(slot, row);
  }

  /** Removes `slot` (whose row is `row`). */
  delete(slot: string, row: number): void {
    this.index.delete(slot);
    this.#free.push(row);
  }

  #grow(): void {
    const ids = new Float64Array(this.ids.length * 2);
    ids.set(this.ids);
    const ats = new Float64Array(this.ats.length * 2);
    ats.set(this.ats);
    this.ids = ids;
    this.ats = ats;
  }
}

/**
 * The live keys of one store, at most one entry per (scope, key). An entry is a pet id and a
 * time; the payload's fingerprint is not kept in memory, since the pet itself holds the
 * validated NewPet it was made from (pets are immutable): a repeat is compared with it.
 *
 * Entries are added in ascending pet id (creates are applied in id order, and a restart
 * loads them in file order), so the index's own order is id order and, clocks permitting,
 * time order: expired entries are swept from its front as new ones arrive, and a snapshot
 * walks it beside the pets.
 */
export class KeyTable {
  readonly retentionMs: number;
  #live = new KeyRows();
  /** Creates with a key queued or being written: a repeat meanwhile is answered 409. */
  readonly #pending = new Set<string>();
  /** Scope digest -> a short prefix, so that each slot does not repeat 64 hex digits. */
  readonly #prefixes = new Map<string, string>();
  readonly #scopes: string[] = [];

  constructor(retentionMs: number) {
    this.retentionMs = retentionMs;
  }

  get size(): number {
    return this.#live.size;
  }

  /** The table's name for (scope, key). A key holds no newline, so the split is unambiguous. */
  slot(scope: string, key: string): string {
    let prefix = this.#prefixes.get(scope);
    if (prefix === undefined) {
      prefix = this.#scopes.length.toString(36);
      this.#prefixes.set(scope, prefix);
      this.#scopes.push(scope);
    }
    // join makes one flat string; `+` or a template would make a cons string holding the
    // header's own string as well: 32 bytes more per key held.
    return [prefix, key].join('\n');
  }

  /** The pet id of a live key, or undefined (an expired entry is dropped on the way). */
  liveId(slot: string, now: number): number | undefined {
    const live = this.#live;
    const row = live.index.get(slot);
    if (row === undefined) return undefined;
    if ((live.ats[row] as number) + this.retentionMs > now) return live.ids[row] as number;
    live.delete(slot, row);
    return undefined;
  }

  isPending(slot: string): boolean {
    return this.#pending.has(slot);
  }

  setPending(slot: string, pending: boolean): void {
    if (pending) this.#pending.add(slot);
    else this.#pending.delete(slot);
  }

  /** Records a key made durable with pet `id` at `at`, and sweeps expired ones from the front. */
  add(slot: string, id: number, at: number, now: number): void {
    const live = this.#live;
    const row = live.index.get(slot);
    if (row !== undefined) live.delete(slot, row); // an expired entry of the same slot: the new one goes to the end
    live.push(slot, id, at);
    this.sweep(now, 2);
  }

  /**
   * A key read from disk: kept only while it is live. A key stamped later than `now` was
   * made while the service clock was moved ahead (POST /__admin/clock), an offset a restart
   * does not keep: it counts as made now, so it lives one retention, not years.
   */
  load(record: KeyRecord, id: number, now: number): void {
    if (record.at + this.retentionMs <= now) return;
    this.add(this.slot(record.scope, record.key), id, Math.min(record.at, now), now);
  }

  /**
   * Drops expired entries from the front, at most `max` (all when omitted); stops at the
   * first live one. Two per add keep up with any rate of creates: the table never holds
   * more than the keys of one retention period plus those swept later.
   */
  sweep(now: number, max = Infinity): void {
    const live = this.#live;
    let n = 0;
    for (const [slot, row] of live.index) {
      if (n++ >= max || (live.ats[row] as number) + this.retentionMs > now) return;
      live.delete(slot, row);
    }
  }

  /** Empties the table (a reset); fresh rows, so a snapshot walking the old ones is undisturbed. */
  clear(): void {
    this.#live = new KeyRows();
  }

  /** The keys as they are now, for a snapshot of the pets as they are now (see KeyCursor). */
  cursor(now: number): KeyCursor {
    return new KeyCursor(this.#live, this.#scopes, this.retentionMs, now);
  }

  /** A cursor over another table's rows in this table's slots (a restore being written to disk). */
  cursorOf(rows: KeyRows, now: number): KeyCursor {
    return new KeyCursor(rows, this.#scopes, this.retentionMs, now);
  }

  /**
   * The live entries as they are now, to walk lazily (a snapshot copies them in chunks): walk
   * `index` and read a key's row as it is reached. Entries added later have higher ids than
   * the snapshot's next id (the caller skips them), and entries deleted meanwhile had expired.
   */
  walk(): KeyRows {
    return this.#live;
  }

  /** Replaces the live keys by rows built aside (slots of this table, ascending id), at once; pending ones kept. */
  replace(rows: KeyRows): void {
    this.#live = rows;
  }
}

/**
 * Walks the live keys beside the pets of a snapshot, both in ascending id: for each pet,
 * the `"idem"` member its line carries, if it has a key younger than the retention.
 * Entries added meanwhile have higher ids (reached only past the snapshot's last pet), and
 * entries deleted meanwhile are skipped by the Map's iterator.
 */
export class KeyCursor {
  readonly #entries: IterableIterator<[string, number]>;
  /** The next key: its slot, pet id and time (read from its row when reached). */
  #slot: string | undefined = undefined;
  #id = 0;
  #at = 0;

  constructor(
    private readonly rows: KeyRows,
    private readonly scopes: readonly string[],
    private readonly retentionMs: number,
    private readonly now: number,
  ) {
    this.#entries = rows.index.entries();
    this.#advance();
  }

  #advance(): void {
    const step = this.#entries.next();
    if (step.done === true) {
      this.#slot = undefined;
      return;
    }
    const [slot, row] = step.value;
    this.#slot = slot;
    this.#id = this.rows.ids[row] as number;
    this.#at = this.rows.ats[row] as number;
  }

  /** The snapshot line of `pet` (its key, if it has a live one, included). */
  line(pet: Readonly<Pet>, json: string): string {
    while (this.#slot !== undefined && this.#id < pet.id) this.#advance();
    const slot = this.#slot;
    if (slot === undefined || this.#id !== pet.id) return json;
    const at = this.#at;
    this.#advance();
    if (at + this.retentionMs <= this.now) return json;
    const cut = slot.indexOf('\n');
    const scope = this.scopes[parseInt(slot.slice(0, cut), 36)] as string;
    return keyedLine(json, { scope, key: slot.slice(cut + 1), fp: newPetFingerprint(pet), at });
  }
}

/** A pet's JSON line with its key: the pet's members, then `"idem"`. */
export function keyedLine(petJson: string, record: KeyRecord): string {
  const idem = `{"scope":"${record.scope}","key":${JSON.stringify(record.key)},"fp":"${record.fp}","at":${record.at}}`;
  return `${petJson.slice(0, -1)},"idem":${idem}}`;
}

/** The record to write for a create with a key, made at `at`. */
export function keyRecord(idem: IdempotencyKey, at: number): KeyRecord {
  return { scope: idem.scope, key: idem.key, fp: idem.fingerprint, at };
}

const SCOPE = /^[0-9a-f]{64}$/;
const FINGERPRINT = /^[A-Za-z0-9_-]{43}$/;

/**
 * Checks the `"idem"` member read from disk for `pet`; returns it, or what is wrong. The
 * fingerprint must be the pet's own: the pet was made from the payload it fingerprints, so
 * any other value means the line was altered.
 */
export function checkKeyRecord(value: unknown, pet: Readonly<Pet>): KeyRecord | string {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'is not an object';
  const rec = value as Record<string, unknown>;
  const { scope, key, fp, at } = rec;
  if (typeof scope !== 'string' || !SCOPE.test(scope)) return 'has no valid "scope" (64 lowercase hex digits)';
  if (typeof key !== 'string' || !isIdempotencyKey(key)) return 'has no valid "key" (1..255 printable ASCII characters)';
  if (typeof fp !== 'string' || !FINGERPRINT.test(fp)) return 'has no valid "fp"';
  if (typeof at !== 'number' || !Number.isSafeInteger(at) || at < 0) return 'has no valid "at"';
  if (Object.keys(rec).length !== 4) return 'has unexpected fields';
  if (fp !== newPetFingerprint(pet)) return 'has a fingerprint that is not the pet\'s';
  return { scope, key, fp, at };
}
