// How pets look on disk: one canonical JSON text per pet, shared by the journal, the snapshot
// and the HTTP layer, plus the checks applied when reading either file back.
import { PET_STATUSES, type Pet, type PetStatus } from '../core/index.js';
import { checkKeyRecord, KeyedPet, type KeyRecord } from './idempotency.js';

export const SNAPSHOT_FORMAT = 'petstore-snapshot';
export const SNAPSHOT_VERSION = 1;
/** The journal line that empties the store (ids restart at 1). */
export const RESET_RECORD = '{"op":"reset"}';
/** The largest value nextId may take: one past the largest safe id. */
export const MAX_NEXT_ID = Number.MAX_SAFE_INTEGER + 1;

/**
 * JSON.stringify(pet) with the keys always in the order id, name, categoryId, status, whatever
 * order the object's own keys are in. Built by hand because it runs for every pet a list
 * returns, and a template is several times faster than a generic stringify.
 */
export function petJson(pet: Readonly<Pet>): string {
  return `{"id":${pet.id},${petTail(pet)}`;
}

/**
 * A pet's JSON text after its id (name, categoryId, status if any, and the closing brace):
 * what petJson writes after `{"id":N,`. The PostgreSQL store sends it in a batch before the id
 * is known and answers with the same text, so a name is escaped once per create.
 */
export function petTail(pet: Readonly<Pick<Pet, 'name' | 'categoryId' | 'status'>>): string {
  const head = `"name":${JSON.stringify(pet.name)},"categoryId":${pet.categoryId}`;
  return pet.status === undefined ? `${head}}` : `${head},"status":"${pet.status}"}`;
}

/** A fresh pet object with exactly the canonical keys, in order. */
export function makePet(id: number, name: string, categoryId: number, status: PetStatus | undefined): Pet {
  return status === undefined ? { id, name, categoryId } : { id, name, categoryId, status };
}

const STATUS_SET: ReadonlySet<unknown> = new Set<unknown>(PET_STATUSES);

/**
 * Checks a value read from disk: returns it as a Pet (the same object, not a copy, so that
 * loading a million pets allocates nothing more) or a message saying what is wrong.
 */
export function checkPet(value: unknown): Pet | string {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'is not an object';
  const rec = value as Record<string, unknown>;
  const { id, name, categoryId, status } = rec;
  if (typeof id !== 'number' || !Number.isSafeInteger(id) || id < 1) return 'has no valid "id"';
  if (typeof name !== 'string') return `(id ${id}) has no valid "name"`;
  if (typeof categoryId !== 'number' || !Number.isSafeInteger(categoryId)) return `(id ${id}) has no valid "categoryId"`;
  if (status !== undefined && !STATUS_SET.has(status)) return `(id ${id}) has an invalid "status"`;
  // Exactly the known keys: anything else would be silently dropped by petJson.
  let keys = 0;
  for (const key in rec) if (Object.hasOwn(rec, key)) keys++;
  if (keys !== (status === undefined ? 3 : 4)) return `(id ${id}) has unexpected fields`;
  return rec as unknown as Pet;
}

/**
 * A pet line of the journal or the snapshot: a pet, or (since idempotency keys) a pet with
 * an `"idem"` member, its key. Lines without one, as every earlier version wrote, are read
 * as before, without a copy; a keyed line's pet is the object without that member.
 */
export function checkStoredPet(value: unknown): Pet | KeyedPet | string {
  if (typeof value !== 'object' || value === null || !Object.hasOwn(value, 'idem')) return checkPet(value);
  const { idem, ...fields } = value as Record<string, unknown>;
  const pet = checkPet(fields);
  if (typeof pet === 'string') return pet;
  const record = checkKeyRecord(idem, pet);
  return typeof record === 'string' ? `(id ${pet.id}) has an "idem" that ${record}` : new KeyedPet(pet, record);
}

/** What a snapshot file holds once checked. */
export interface SnapshotContent {
  nextId: number;
  /** Ascending ids, all below nextId. */
  pets: Pet[];
}

/** Checks a parsed snapshot document; returns its content or a message saying what is wrong. */
export function checkSnapshot(doc: unknown): SnapshotContent | string {
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) return 'is not a JSON object';
  const rec = doc as Record<string, unknown>;
  if (rec['format'] !== SNAPSHOT_FORMAT) return `has no "format": "${SNAPSHOT_FORMAT}"`;
  if (rec['version'] !== SNAPSHOT_VERSION) return `has an unsupported "version" (expected ${SNAPSHOT_VERSION})`;
  const nextId = rec['nextId'];
  if (typeof nextId !== 'number' || !Number.isInteger(nextId) || nextId < 1 || nextId > MAX_NEXT_ID) {
    return 'has no valid "nextId"';
  }
  const pets = rec['pets'];
  if (!Array.isArray(pets)) return 'has no "pets" array';
  let previousId = 0;
  for (let i = 0; i < pets.length; i++) {
    const pet = checkPet(pets[i]);
    if (typeof pet === 'string') return `has a bad pet at index ${i}: it ${pet}`;
    if (pet.id <= previousId) return `has pets out of id order at index ${i} (id ${pet.id})`;
    if (pet.id >= nextId) return `has a pet id (${pet.id}) not below "nextId" (${nextId})`;
    previousId = pet.id;
  }
  const problem = checkNextId(nextId, previousId);
  if (problem !== undefined) return problem;
  return { nextId, pets: pets as Pet[] };
}

/**
 * The store's nextId is always one past its last pet's id (1 when empty): ids are given out
 * in order and a failed write gives its ids out again. A larger one would hide every journal
 * record below it, so it is damage.
 */
export function checkNextId(nextId: number, lastId: number): string | undefined {
  if (nextId === lastId + 1) return undefined;
  return lastId === 0
    ? `has "nextId" ${nextId} but no pets (expected 1)`
    : `has "nextId" ${nextId} but its last pet has id ${lastId} (expected ${lastId + 1})`;
}

/** The snapshot text before the first pet; pets follow one per line, comma-separated. */
export function snapshotHead(nextId: number): string {
  return `{"format":"${SNAPSHOT_FORMAT}","version":${SNAPSHOT_VERSION},"nextId":${nextId},"pets":[`;
}

/** The snapshot text after the last pet. */
export const SNAPSHOT_TAIL = '\n]}\n';
/** The snapshot's last line. */
export const SNAPSHOT_END = ']}';

const HEAD = new RegExp(`^\\{"format":"${SNAPSHOT_FORMAT}","version":${SNAPSHOT_VERSION},"nextId":([1-9][0-9]{0,15}),"pets":\\[$`);

/** The nextId of a snapshot's first line (snapshotHead), or undefined if it is not one. */
export function parseHead(line: string): number | undefined {
  const match = HEAD.exec(line);
  if (match === null) return undefined;
  const nextId = Number(match[1]);
  return nextId <= MAX_NEXT_ID ? nextId : undefined;
}

/** One parsed journal line. */
export type JournalRecord = { kind: 'pet'; pet: Pet; idem: KeyRecord | undefined } | { kind: 'reset' };

/** Reads one journal line (already parsed as JSON); returns the record or what is wrong. */
export function checkJournalRecord(value: unknown): JournalRecord | string {
  if (typeof value === 'object' && value !== null && 'op' in value) {
    return (value as { op: unknown }).op === 'reset' && Object.keys(value).length === 1
      ? { kind: 'reset' }
      : 'is an unknown operation';
  }
  const pet = checkStoredPet(value);
  if (typeof pet === 'string') return `is not a valid pet: it ${pet}`;
  return pet instanceof KeyedPet ? { kind: 'pet', pet: pet.pet, idem: pet.idem } : { kind: 'pet', pet, idem: undefined };
}
