// The copying behind named snapshots (admin API): a store's state taken by reference at one
// moment (PetIndex.state(), KeyTable.walk()), its keys copied in steps of about half a
// millisecond that give the event loop back in between, so that a snapshot of a million pets
// never holds requests up for long.
import { Steps, step, yieldToLoop } from '../core/index.js';
import type { StoreSnapshot } from './contract.js';
import { KeyRows, type KeyTable } from './idempotency.js';
import { ownedLists, type IndexState, type RestoredLists } from './pet-index.js';

/**
 * Idempotency keys copied (or put into a new table) between yields, at most: well under a
 * millisecond of work once the code is compiled (docs/harness.md, snapshots). A step also
 * ends once it has run STEP_MS: the first steps run before V8 has compiled the loop, several
 * times slower.
 */
export const COPY_CHUNK = 4096;

/** `work` over [0, count) in steps (see step()), a turn of the event loop before each. */
async function inSteps(count: number, most: number, work: (from: number, to: number) => void): Promise<void> {
  for (let i = 0; i < count; ) {
    await yieldToLoop();
    i = step(i, Math.min(count, i + most), work);
  }
}

/**
 * The saved keys, `count` of them, in ascending pet id: each one's slot in the table, its
 * pet, and how old it was when saved. Typed arrays rather than an object per key: many small
 * objects made while requests are served cost the young-generation collector long pauses.
 */
export interface SavedKeys {
  readonly count: number;
  readonly slots: readonly string[];
  readonly ids: Float64Array;
  readonly ages: Float64Array;
}

/**
 * What a local store's snapshot holds (StoreSnapshot, opened): the index's lists by
 * reference with their lengths then (nothing is copied: pets are immutable and those lists
 * only grow, so the prefixes never change), and a copy of the live keys.
 */
export interface LocalSnapshot extends StoreSnapshot {
  readonly state: IndexState;
  readonly keys: SavedKeys;
}

/** Bytes per array slot (a pointer or a small integer). */
const SLOT_BYTES = 8;
/** A saved key's slot pointer and two numbers, besides the slot string. */
const KEY_BYTES = 24;

/**
 * The index's state (by reference) and a copy of the live keys of `table` (those of pets
 * below state.nextId and younger than the retention at `now`), walked in chunks. The keys'
 * iterator is taken before the first yield, so the copy is the state at the call: keys added
 * meanwhile belong to pets above state.nextId and are skipped. (A key deleted meanwhile had
 * expired when deleted: at most one that expired during the copy's few ms is missed.)
 */
export async function copyState(state: IndexState, table: KeyTable, now: number): Promise<LocalSnapshot> {
  const rows = table.walk();
  const entries = rows.index.entries();
  const most = rows.size;
  const retention = table.retentionMs;
  // Nothing more at the call (the save's one step is the sum of every part's call): the
  // output is allocated in a step of its own.
  await yieldToLoop();
  const slots = new Array<string>(most);
  const ids = new Float64Array(most);
  const ages = new Float64Array(most);
  let count = 0;
  let keyChars = 0;
  await yieldToLoop();
  const steps = new Steps(COPY_CHUNK);
  for (const [slot, row] of entries) {
    const pause = steps.next();
    if (pause !== undefined) await pause;
    const id = rows.ids[row] as number;
    const at = rows.ats[row] as number;
    if (id >= state.nextId || at + retention <= now || count === most) continue;
    slots[count] = slot;
    ids[count] = id;
    ages[count] = now - at;
    count++;
    keyChars += slot.length;
  }
  const b = state.byStatus;
  const arraySlots = state.count + b.available.count + b.pending.count + b.sold.count;
  return {
    pets: state.count,
    nextId: state.nextId,
    idempotencyKeys: count,
    bytes: arraySlots * SLOT_BYTES + most * KEY_BYTES + keyChars * 2,
    state,
    keys: { count, slots, ids, ages },
  };
}

/** The restored state, built aside: the index's new lists and the new key table. */
export interface PreparedRestore {
  readonly lists: RestoredLists;
  /** The saved keys as live entries at the restore's `now`, in ascending pet id. */
  readonly keys: KeyRows;
  /** The wall time the keys' ages count from. */
  readonly now: number;
}

/**
 * Lists of a snapshot for the index to own (it appends to them), and its keys as a new
 * table, each key as old at `now` as it was when saved. The lists share the snapshot's full
 * segments and copy only each list's last, partial one (ownedLists: at most SEGMENT_SIZE
 * items, a fraction of a millisecond); the keys are put in in steps with a turn of the event
 * loop between them.
 */
export async function prepareRestore(s: LocalSnapshot, now: number): Promise<PreparedRestore> {
  const lists = ownedLists(s.state);
  const saved = s.keys;
  const keys = new KeyRows(Math.max(16, saved.count));
  await inSteps(saved.count, COPY_CHUNK, (from, to) => {
    for (let i = from; i < to; i++) keys.push(saved.slots[i] as string, saved.ids[i] as number, now - (saved.ages[i] as number));
  });
  return { lists, keys, now };
}
