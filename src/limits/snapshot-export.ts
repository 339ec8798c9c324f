// A snapshot of the in-memory limiter's slots, out and in: the export walks the LRU list in
// chunks while requests go on (copy on write: slots.ts keeps what changes meanwhile as it was),
// and the import builds a new table aside, in chunks, for the limiter to swap in at once.
import { Steps, step, yieldToLoop } from '../core/index.js';
import {
  EMPTY_NUMBERS, INITIAL_SLOTS, L_MOVED, L_NEXT, L_COPIED, L_PASSED, LINKS, NONE, NUMBERS, N_AT, N_BANNED_UNTIL, N_BORN, N_DAY,
  N_MINUTE, N_PER_DAY, N_PER_MINUTE, N_STRIKES, Table, appendSlot, unlinkSlot, writeCopies, writeLive, type ExportSession, type Slots,
} from './slots.js';
import { SNAPSHOT_FIELDS, SnapshotField as F, type LimiterSnapshot } from './state.js';

/**
 * Entries copied (or built) between two turns of the event loop by a snapshot's export and
 * import, at most: well under a millisecond of work each once the code is compiled
 * (docs/harness.md, snapshots). A step also ends once it has run STEP_MS: the first steps
 * run before V8 has compiled the loop, several times slower.
 */
export const SNAPSHOT_CHUNK = 4096;

/**
 * The exact state of every id, oldest first (see LimiterSnapshot), as it is at the call,
 * written in chunks of SNAPSHOT_CHUNK entries with a turn of the event loop between them;
 * nothing is walked or copied at the call itself. Requests go on meanwhile, and what they
 * do does not show in it (copy on write): an entry about to change, or to leave its place
 * in the list (touched, evicted, dropped), is copied first, as it was, and its copy is
 * written where it stood; entries added meanwhile are left out. One export at a time.
 */
export async function exportSlots(s: Slots, mono: number): Promise<LimiterSnapshot> {
  if (s.export !== undefined) throw new Error('a limiter snapshot is already being taken');
  const t = s.t;
  const count = t.index.size;
  const x: ExportSession = {
    id: ++s.exports,
    t,
    added: s.added,
    mono,
    ids: [],
    numbers: EMPTY_NUMBERS,
    written: 0,
    cursor: t.oldest,
    tail: undefined,
  };
  s.export = x;
  try {
    // Nothing more at the call: the save takes every part in one step, whose block is the
    // sum of what each part does at its call. The output (a megabyte or more at a hundred
    // thousand ids) is allocated in a step of its own; until then, what requests change is
    // kept aside by copy on write as at any other point of the export.
    await yieldToLoop();
    x.ids = new Array<string>(count);
    x.numbers = new Float64Array(count * SNAPSHOT_FIELDS);
    await yieldToLoop();
    const steps = new Steps(SNAPSHOT_CHUNK);
    for (;;) {
      const slot = x.cursor;
      // The list's old part ends where the entries added or moved since begin.
      if (slot === NONE) break;
      const l = slot * LINKS;
      if ((t.num[slot * NUMBERS + N_BORN] as number) > x.added || t.link[l + L_MOVED] === x.id) break;
      const before = t.before.get(slot);
      if (before !== undefined) {
        writeCopies(x, before);
        t.before.delete(slot);
      }
      if (t.link[l + L_COPIED] !== x.id) writeLive(x, slot);
      t.link[l + L_PASSED] = x.id;
      x.cursor = t.link[l + L_NEXT] as number;
      const pause = steps.next();
      if (pause !== undefined) await pause;
    }
    writeCopies(x, x.tail);
    if (x.written !== count) throw new Error(`limiter snapshot: ${x.written} entries written, ${count} expected`);
    return { ids: x.ids, numbers: x.numbers };
  } finally {
    s.export = undefined;
    t.before.clear();
  }
}

/**
 * Builds the state of a snapshot aside, in chunks that give the event loop a turn in
 * between (requests meanwhile see the state as it is), and returns the step that swaps it
 * in at once. `mono`: the clock's monotonic time the entries are built for (default now;
 * a restore that also puts back a clock offset passes the time that offset gives). At the
 * swap each id is exactly as it was when saved: the time until the swap does not count.
 * It allocates no object per id: typed arrays sized once, an index of small integers.
 */
export async function buildTable(snapshot: LimiterSnapshot, mono: number, maxEntries: number): Promise<Table> {
  // Slot times are in the clock's time as of `mono`; the swap sets #shift so that the
  // limiter reads `mono` then, however long it took to get there.
  const { ids, numbers: n } = snapshot;
  // A bound made smaller since the save keeps the most recently used ids, as an eviction would.
  const first = Math.max(0, ids.length - (Number.isFinite(maxEntries) ? maxEntries : ids.length));
  const t = new Table(Math.max(INITIAL_SLOTS, ids.length - first + 1));
  const fill = (from: number, to: number): void => {
    const num = t.num; // sized for them all: it does not grow meanwhile
    for (let i = from; i < to; i++) {
      const id = ids[i] as string;
      const dup = t.index.get(id);
      if (dup !== undefined) {
        // Not from an export (ids are unique there): the later one wins, as restore() does.
        unlinkSlot(t, dup);
        t.release(dup);
      }
      const slot = t.take(id);
      const at = i * SNAPSHOT_FIELDS;
      const o = slot * NUMBERS;
      num[o + N_PER_MINUTE] = n[at + F.perMinute] as number;
      num[o + N_PER_DAY] = n[at + F.perDay] as number;
      num[o + N_MINUTE] = n[at + F.minute] as number;
      num[o + N_DAY] = n[at + F.day] as number;
      num[o + N_AT] = mono - (n[at + F.ageMs] as number);
      num[o + N_STRIKES] = n[at + F.strikes] as number;
      const banLeft = n[at + F.banLeftMs] as number;
      num[o + N_BANNED_UNTIL] = banLeft > 0 ? mono + banLeft : 0;
      num[o + N_BORN] = 0;
      appendSlot(t, slot);
    }
  };
  for (let i = first; i < ids.length; ) {
    if (i > first) await yieldToLoop();
    i = step(i, Math.min(ids.length, i + SNAPSHOT_CHUNK), fill);
  }
  return t;
}
