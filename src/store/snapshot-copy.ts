// The copying behind named snapshots (admin API): a store's state taken by reference at one
// moment (PetIndex.state(), KeyTable.walk()) and copied in chunks that give the event loop
// back in between, so that a snapshot of a million pets never holds requests up for long.
import type { Pet, PetStatus } from '../core/index.js';
import type { StoreSnapshot } from './contract.js';
import type { KeyTable, LiveKey } from './idempotency.js';
import type { IndexState } from './pet-index.js';

/**
 * Elements copied between yields. Measured (test/store/snapshot.test.ts) at well under a
 * millisecond per chunk on a busy two-core machine.
 */
export const COPY_CHUNK = 32_768;

/** Gives the event loop one turn (timers, I/O) before going on. */
export function yieldToLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** A copy of the first `count` elements of `from`, made COPY_CHUNK at a time. */
export async function copyPrefix<T>(from: ReadonlyArray<T>, count: number): Promise<T[]> {
  const out: T[] = [];
  for (let start = 0; start < count; start += COPY_CHUNK) {
    if (start > 0) await yieldToLoop();
    const end = Math.min(count, start + COPY_CHUNK);
    for (let i = start; i < end; i++) out.push(from[i] as T);
  }
  return out;
}

/** A saved key: its slot in the table, its pet, and how old it was when saved. */
export type SavedKey = readonly [slot: string, id: number, ageMs: number];

/** What a local store's snapshot holds (StoreSnapshot, opened). */
export interface LocalSnapshot extends StoreSnapshot {
  readonly petList: readonly Pet[];
  readonly byStatus: Readonly<Record<PetStatus, readonly number[]>>;
  readonly keys: readonly SavedKey[];
}

/** Bytes per array slot (a pointer or a small integer). */
const SLOT_BYTES = 8;
/** A saved key's tuple and its numbers, besides the slot string. */
const KEY_BYTES = 64;

/**
 * Copies `state` and the live keys of `table` (those of pets below state.nextId and younger
 * than the retention at `now`) in chunks. Everything is read from references taken before
 * the first yield, so the copy is the state at the call, whatever happens meanwhile.
 */
export async function copyState(state: IndexState, table: KeyTable, now: number): Promise<LocalSnapshot> {
  const entries = table.walk();
  const retention = table.retentionMs;
  const petList = await copyPrefix(state.pets, state.count);
  const byStatus = {
    available: await copyPrefix(state.byStatus.available.positions, state.byStatus.available.count),
    pending: await copyPrefix(state.byStatus.pending.positions, state.byStatus.pending.count),
    sold: await copyPrefix(state.byStatus.sold.positions, state.byStatus.sold.count),
  };
  const keys: SavedKey[] = [];
  let keyChars = 0;
  let n = 0;
  for (const [slot, key] of entries) {
    if (++n % COPY_CHUNK === 0) await yieldToLoop();
    if (key.id >= state.nextId || key.at + retention <= now) continue;
    keys.push([slot, key.id, now - key.at]);
    keyChars += slot.length;
  }
  const statusCount = byStatus.available.length + byStatus.pending.length + byStatus.sold.length;
  return {
    pets: petList.length,
    nextId: state.nextId,
    idempotencyKeys: keys.length,
    bytes: (petList.length + statusCount) * SLOT_BYTES + keys.length * KEY_BYTES + keyChars * 2,
    petList,
    byStatus,
    keys,
  };
}

/** Fresh arrays of a snapshot for the index to own (it appends to them), copied in chunks. */
export async function copyForRestore(s: LocalSnapshot): Promise<{ pets: Pet[]; byStatus: Record<PetStatus, number[]> }> {
  return {
    pets: await copyPrefix(s.petList, s.petList.length),
    byStatus: {
      available: await copyPrefix(s.byStatus.available, s.byStatus.available.length),
      pending: await copyPrefix(s.byStatus.pending, s.byStatus.pending.length),
      sold: await copyPrefix(s.byStatus.sold, s.byStatus.sold.length),
    },
  };
}

/** The saved keys as live entries at `now`: each as old as it was when saved. */
export function liveKeys(keys: readonly SavedKey[], now: number): Array<[string, LiveKey]> {
  return keys.map(([slot, id, ageMs]) => [slot, { id, at: now - ageMs }]);
}
