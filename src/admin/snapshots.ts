// Named snapshots for test harnesses (PUT /__admin/snapshots/{name}, .../restore): the pets
// and next id, the limiter state of every key and address, the idempotency keys, the armed
// faults and the clock offset, saved in memory and put back exactly. At most MAX_SNAPSHOTS;
// they do not outlive the process. Operations run one at a time, in the order asked.
//
// Neither a save nor a restore holds the event loop for more than about a millisecond of its
// own work at a time with a million pets and a full address table, and neither leaves an
// object per limiter entry or idempotency key for the young generation's collector to copy
// (docs/harness.md, snapshots); both are one point in time for every request:
// - A save takes every part at one moment, in one synchronous step: the store's pets by
//   reference (they never change, their arrays only grow), the limiters' order of ids, the
//   idempotency keys' iterator. It then copies in chunks that yield to the event loop; what
//   requests change meanwhile does not show in it (the limiters copy an entry before a
//   request changes it: copy on write). Requests are never held up by a save.
// - A restore builds the whole restored state aside in chunks (new arrays, tables and lists
//   that no request sees), then swaps every part in at once, in one synchronous step, once
//   the store has made it durable. Requests meanwhile are answered from the state before,
//   and everything after the swap from the restored state; no request sees half of each.
import { ApiError, type ServiceClock } from '../core/index.js';
import type { LimiterSnapshot } from '../limits/index.js';
import type { SnapshotStore, StoreSnapshot } from '../store/index.js';
import type { Faults, SavedFault } from './faults.js';

export const MAX_SNAPSHOTS = 16;
const NAME = /^[A-Za-z0-9._-]{1,64}$/;

/** What a snapshot is taken of. */
export interface SnapshotParts {
  readonly store: SnapshotStore;
  /** The key limiter and the per-address limiter. */
  readonly limiters: ReadonlyArray<{
    exportSnapshot(): Promise<LimiterSnapshot>;
    prepareImport(s: LimiterSnapshot, mono?: number): Promise<() => void>;
  }>;
  readonly faults: Faults;
  readonly clock: ServiceClock;
}

export interface SnapshotInfo {
  readonly name: string;
  readonly pets: number;
  /** When it was saved, RFC 3339 on the service clock. */
  readonly time: string;
}

interface Saved {
  readonly info: SnapshotInfo;
  readonly store: StoreSnapshot;
  readonly limiters: readonly LimiterSnapshot[];
  readonly faults: readonly SavedFault[];
  readonly offsetMs: number;
  readonly bytes: number;
}

/** Bytes per limiter entry of a snapshot besides its numbers: a slot of the ids' array (the id strings are the limiter's own). */
const LIMITER_ENTRY_BYTES = 8;

/** 400 unless `name` is 1..64 of A-Za-z0-9 . _ - */
export function snapshotNameError(name: string): ApiError | undefined {
  return NAME.test(name)
    ? undefined
    : new ApiError('invalid_request', 'The snapshot name must be 1 to 64 characters from A-Z a-z 0-9 . _ - (in the path /__admin/snapshots/{name}).');
}

/** The 501 where snapshots cannot be had, saying why. */
export function snapshotsUnavailable(why: string): ApiError {
  return new ApiError('not_implemented', `Snapshots are not available here: ${why}. They work with the memory and file stores in one process with in-process limits.`);
}

export class Snapshots {
  readonly #parts: SnapshotParts;
  readonly #saved = new Map<string, Saved>();
  #chain: Promise<unknown> = Promise.resolve();
  /** Operations under way or waiting; while 0, the next one starts at once (in the caller's step). */
  #pending = 0;

  constructor(parts: SnapshotParts) {
    this.#parts = parts;
  }

  get size(): number {
    return this.#saved.size;
  }

  /** Estimated heap bytes all snapshots hold besides the pets they share with the store. */
  get bytes(): number {
    let total = 0;
    for (const s of this.#saved.values()) total += s.bytes;
    return total;
  }

  /** Saves (or replaces) `name`: 201 {name, pets}; 400 for a bad name, 409 for a 17th. */
  save(name: string): Promise<{ name: string; pets: number } | ApiError> {
    return this.#serial(async () => {
      const bad = snapshotNameError(name);
      if (bad !== undefined) return bad;
      if (!this.#saved.has(name) && this.#saved.size >= MAX_SNAPSHOTS) {
        return new ApiError('conflict', `${MAX_SNAPSHOTS} snapshots are kept already; delete one (DELETE /__admin/snapshots/{name}) or reuse a name.`);
      }
      const { store, limiters, faults, clock } = this.#parts;
      // One synchronous step: every part as it is now (each export takes its state at the
      // call, before its first yield), then the copies in chunks.
      const time = clock.now();
      const offsetMs = clock.offsetMs;
      const savedFaults = faults.save();
      const exports = limiters.map((l) => l.exportSnapshot());
      const capture = store.captureSnapshot();
      const [storePart, ...savedLimiters] = await Promise.all([capture, ...exports]);
      let bytes = storePart.bytes;
      for (const l of savedLimiters) bytes += l.ids.length * LIMITER_ENTRY_BYTES + l.numbers.byteLength;
      const info = { name, pets: storePart.pets, time: new Date(time).toISOString() };
      this.#saved.delete(name); // a replaced name goes to the end of the listing
      this.#saved.set(name, { info, store: storePart, limiters: savedLimiters, faults: savedFaults, offsetMs, bytes });
      return { name, pets: storePart.pets };
    });
  }

  /** Puts `name` back exactly; 404 for an unknown name; rejects as a store write does (503). */
  restore(name: string): Promise<undefined | ApiError> {
    return this.#serial(async () => {
      const bad = snapshotNameError(name);
      if (bad !== undefined) return bad;
      const saved = this.#saved.get(name);
      if (saved === undefined) return unknown(name);
      const { store, limiters, faults, clock } = this.#parts;
      // Every part is built aside for the clock as it will read once the offset is put back
      // (the few ms the building takes count as time passed), then swapped in at once.
      const mono = clock.monotonic() - clock.offsetMs + saved.offsetMs;
      const now = clock.now() - clock.offsetMs + saved.offsetMs;
      const swaps: Array<() => void> = [];
      for (const [i, l] of limiters.entries()) swaps.push(await l.prepareImport(saved.limiters[i] as LimiterSnapshot, mono));
      await store.restoreSnapshot(saved.store, () => {
        clock.restoreOffset(saved.offsetMs);
        faults.load(saved.faults);
        for (const swap of swaps) swap();
      }, now);
      return undefined;
    });
  }

  /** Every snapshot, oldest first. */
  list(): SnapshotInfo[] {
    return [...this.#saved.values()].map((s) => s.info);
  }

  /** 204, or 404 for an unknown name. */
  delete(name: string): undefined | ApiError {
    const bad = snapshotNameError(name);
    if (bad !== undefined) return bad;
    if (!this.#saved.delete(name)) return unknown(name);
    return undefined;
  }

  /** Forgets every snapshot (the service is closing). */
  clear(): void {
    this.#saved.clear();
  }

  #serial<T>(fn: () => Promise<T>): Promise<T> {
    // Started at once when nothing else is under way, so that a save takes the state as it
    // is when asked for, not a microtask later.
    const run = this.#pending === 0 ? fn() : this.#chain.then(fn, fn);
    this.#pending++;
    const done = run.finally(() => {
      this.#pending--;
    });
    this.#chain = done.catch(() => undefined);
    return run;
  }
}

function unknown(name: string): ApiError {
  return new ApiError('not_found', `No snapshot named ${JSON.stringify(name)}.`);
}
