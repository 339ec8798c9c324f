// Write planning: queued operations become one batch (ids assigned in queue order, journal
// lines built) and, once the batch is durable (or at once for the memory store), are applied
// to the index. Reads are in reads.ts.
import { IdsExhaustedError, StoreInputError } from './errors.js';
import { makePet, petJson, RESET_RECORD, MAX_NEXT_ID } from './codec.js';
import type { PetIndex } from './pet-index.js';
import type { SeedPet, StoredPet } from './contract.js';
import { keyedLine, type KeyRecord, type KeyTable } from './idempotency.js';
import type { NewPet } from '../core/index.js';

interface Settle<T> {
  resolve(value: T): void;
  reject(err: Error): void;
}

/** The key a create carries: its slot in the KeyTable, and what its journal line records. */
export interface CreateKey {
  readonly slot: string;
  readonly record: KeyRecord;
}

export type Op =
  | ({ kind: 'create'; input: NewPet; key?: CreateKey } & Settle<StoredPet>)
  | ({ kind: 'seed'; input: ReadonlyArray<SeedPet> } & Settle<StoredPet[]>)
  | ({ kind: 'reset' } & Settle<void>);

/** One accepted operation of a batch with the pets it adds (none for a reset). */
interface Step {
  op: Op;
  pets: StoredPet[];
}

export interface Batch {
  steps: Step[];
  /** The journal lines of the batch, each ending in a newline; '' if nothing to write. */
  text: string;
}

/**
 * Checks what can be checked before queueing: explicit ids are safe integers, ascending
 * within the batch. Whether they exceed every existing id is known only when the batch is
 * planned (creates queued earlier take ids first).
 */
export function checkSeedInput(input: ReadonlyArray<SeedPet>): void {
  if (!Array.isArray(input)) throw new StoreInputError('seed expects an array of pets');
  let previous = 0;
  input.forEach((pet, i) => {
    if (pet.id === undefined) return;
    if (!Number.isSafeInteger(pet.id) || pet.id < 1) {
      throw new StoreInputError(`seed pet #${i} has id ${String(pet.id)}, which is not a positive safe integer`);
    }
    if (pet.id <= previous) {
      throw new StoreInputError(`seed pet #${i} has id ${pet.id}, which is not above the id before it (${previous})`);
    }
    previous = pet.id;
  });
}

const exhausted = (): IdsExhaustedError => new IdsExhaustedError('id space exhausted');

/**
 * Assigns ids from nextId in queue order. An operation that cannot be honoured (seed ids
 * not above existing ones, id space exhausted) is rejected here and left out; the others
 * are unaffected.
 */
export function planBatch(ops: Op[], nextId: number, withText: boolean): Batch {
  const steps: Step[] = [];
  const lines: string[] = [];
  let next = nextId;
  const stored = (id: number, input: NewPet, key?: CreateKey): StoredPet => {
    const pet = makePet(id, input.name, input.categoryId, input.status);
    const json = petJson(pet);
    // The key goes in the pet's own line: one write makes both durable, or neither.
    if (withText) lines.push(key === undefined ? json : keyedLine(json, key.record));
    return { pet, json };
  };
  for (const op of ops) {
    if (op.kind === 'reset') {
      if (withText) lines.push(RESET_RECORD);
      next = 1;
      steps.push({ op, pets: [] });
    } else if (op.kind === 'create') {
      if (next >= MAX_NEXT_ID) {
        op.reject(exhausted());
        continue;
      }
      steps.push({ op, pets: [stored(next++, op.input, op.key)] });
    } else {
      const ids = seedIds(op.input, next);
      if (ids instanceof Error) {
        op.reject(ids);
        continue;
      }
      const pets = op.input.map((input, i) => stored(ids[i] as number, input));
      if (ids.length > 0) next = (ids[ids.length - 1] as number) + 1;
      steps.push({ op, pets });
    }
  }
  return { steps, text: lines.length === 0 ? '' : `${lines.join('\n')}\n` };
}

/** The ids a seed gets when the next free id is `next`, or why it cannot be honoured. */
function seedIds(input: ReadonlyArray<SeedPet>, next: number): number[] | Error {
  const ids: number[] = [];
  for (const [i, pet] of input.entries()) {
    if (pet.id === undefined) {
      if (next >= MAX_NEXT_ID) return exhausted();
      ids.push(next++);
    } else if (pet.id < next) {
      return new StoreInputError(
        `seed pet #${i} has id ${pet.id}, which is not above every existing id (the next free id is ${next})`,
      );
    } else {
      ids.push(pet.id);
      next = pet.id + 1;
    }
  }
  return ids;
}

/**
 * Makes a planned batch visible and settles its operations, in queue order. A create's key
 * enters the table with its pet, before the create resolves: a repeat from then on is a replay.
 */
export function applyBatch(batch: Batch, index: PetIndex, keys: KeyTable): void {
  for (const { op, pets } of batch.steps) {
    if (op.kind === 'reset') {
      index.clear();
      keys.clear();
      op.resolve();
      continue;
    }
    for (const { pet } of pets) index.add(pet);
    if (op.kind === 'create') {
      const stored = pets[0] as StoredPet;
      if (op.key !== undefined) keys.add(op.key.slot, stored.pet.id, op.key.record.at, op.key.record.at);
      op.resolve(stored);
    } else {
      op.resolve(pets);
    }
  }
}

/** Rejects every operation of a batch that could not be made durable. */
export function failBatch(batch: Batch, err: Error): void {
  for (const { op } of batch.steps) op.reject(err);
}

/** Wraps an operation in a promise and hands it to `run` (apply now, or queue). */
export function submit<T>(run: (op: Op) => void, make: (settle: Settle<T>) => Op): Promise<T> {
  // A throw from `make` (bad seed input) rejects the promise.
  return new Promise<T>((resolve, reject) => run(make({ resolve, reject })));
}
