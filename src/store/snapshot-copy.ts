// The copying behind named snapshots (admin API): a store's state taken by reference at one
// moment (PetIndex.state(), KeyTable.walk()), its keys copied in chunks that give the event
// loop back in between, so that a snapshot of a million pets never holds requests up for long.
import type { Pet, PetStatus } from '../core/index.js';
import type { StoreSnapshot } from './contract.js';
import type { KeyTable, LiveKey } from './idempotency.js';
import type { IndexState } from './pet-index.js';

/** Idempotency keys copied between yields (a few ms of work at most). */
export const COPY_CHUNK = 32_768;

/** Gives the event loop one turn (timers, I/O) before going on. */
export function yieldToLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** A saved key: its slot in the table, its pet, and how old it was when saved. */
export type SavedKey = readonly [slot: string, id: number, ageMs: number];

/**
 * What a local store's snapshot holds (StoreSnapshot, opened): the index's arrays by
 * reference with their lengths then (nothing is copied: pets are immutable and those arrays
 * only grow, so the prefixes never change), and a copy of the live keys.
 */
export interface LocalSnapshot extends StoreSnapshot {
  readonly state: IndexState;
  readonly keys: readonly SavedKey[];
}

/** Bytes per array slot (a pointer or a small integer). */
const SLOT_BYTES = 8;
/** A saved key's tuple and its numbers, besides the slot string. */
const KEY_BYTES = 64;

/**
 * The index's state (by reference) and a copy of the live keys of `table` (those of pets
 * below state.nextId and younger than the retention at `now`), walked in chunks. The keys'
 * iterator is taken before the first yield, so the copy is the state at the call, whatever
 * happens meanwhile.
 */
export async function copyState(state: IndexState, table: KeyTable, now: number): Promise<LocalSnapshot> {
  const entries = table.walk();
  const retention = table.retentionMs;
  const keys: SavedKey[] = [];
  let keyChars = 0;
  let n = 0;
  for (const [slot, key] of entries) {
    if (++n % COPY_CHUNK === 0) await yieldToLoop();
    if (key.id >= state.nextId || key.at + retention <= now) continue;
    keys.push([slot, key.id, now - key.at]);
    keyChars += slot.length;
  }
  const b = state.byStatus;
  const slots = state.count + b.available.count + b.pending.count + b.sold.count;
  return {
    pets: state.count,
    nextId: state.nextId,
    idempotencyKeys: keys.length,
    bytes: slots * SLOT_BYTES + keys.length * KEY_BYTES + keyChars * 2,
    state,
    keys,
  };
}

/**
 * Fresh arrays of a snapshot for the index to own (it appends to them): one slice per array
 * (a block copy, a few ms for a million pets), with a turn of the event loop between them.
 */
export async function copyForRestore(s: LocalSnapshot): Promise<{ pets: Pet[]; byStatus: Record<PetStatus, number[]> }> {
  const { state } = s;
  const pets = state.pets.slice(0, state.count) as Pet[];
  await yieldToLoop();
  const available = state.byStatus.available.positions.slice(0, state.byStatus.available.count);
  await yieldToLoop();
  const pending = state.byStatus.pending.positions.slice(0, state.byStatus.pending.count);
  await yieldToLoop();
  const sold = state.byStatus.sold.positions.slice(0, state.byStatus.sold.count);
  return { pets, byStatus: { available, pending, sold } };
}

/** The saved keys as live entries at `now`: each as old as it was when saved. */
export function liveKeys(keys: readonly SavedKey[], now: number): Array<[string, LiveKey]> {
  return keys.map(([slot, id, ageMs]) => [slot, { id, at: now - ageMs }]);
}
