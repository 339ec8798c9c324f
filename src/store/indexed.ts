// What the memory and file stores share: reads straight from the in-memory index, and every
// write wrapped as an operation handed to the store's own `run` (apply now, or queue for disk).
import { checkSeedInput, submit } from './batch.js';
import type { Op } from './batch.js';
import type { CreateOutcome, IdempotencyKey, ListQuery, LocalPetStore, SeedPet, SnapshotStore, StoreSnapshot, StoredPet } from './contract.js';
import { keyRecord, newPetFingerprint, type KeyTable } from './idempotency.js';
import type { PetIndex } from './pet-index.js';
import { readPage, readPet, storedPet } from './reads.js';
import { copyState, prepareRestore, type LocalSnapshot, type PreparedRestore } from './snapshot-copy.js';
import type { Clock, NewPet } from '../core/index.js';

const MISMATCH: CreateOutcome = { kind: 'mismatch' };
const IN_FLIGHT: CreateOutcome = { kind: 'in_flight' };

export abstract class IndexedStore implements LocalPetStore, SnapshotStore {
  protected readonly index: PetIndex;
  /** Live idempotency keys, written and cleared with the pets they made. */
  protected readonly keys: KeyTable;
  /** Wall time stamps each key; a key is live for keys.retentionMs from then. */
  protected readonly clock: Clock;

  constructor(index: PetIndex, keys: KeyTable, clock: Clock) {
    this.index = index;
    this.keys = keys;
    this.clock = clock;
  }

  get idempotencyKeys(): number {
    return this.keys.size;
  }

  get count(): number {
    return this.index.count;
  }

  get generation(): number {
    return this.index.generation;
  }

  get(id: number): StoredPet | undefined {
    return readPet(this.index, id);
  }

  list(q: ListQuery): StoredPet[] {
    return readPage(this.index, q);
  }

  create(input: NewPet): Promise<StoredPet> {
    return submit((op) => this.run(op), (s) => ({ kind: 'create', input, ...s }));
  }

  /**
   * A live key answers at once, without a write: the pet it made (same fingerprint) or a
   * mismatch. A key whose create is still queued or being written is in flight. Otherwise
   * the create goes the usual way with its key, which enters the table when the pet becomes
   * visible; a create that fails leaves the key free, so its retry is processed anew.
   */
  createIdempotent(input: NewPet, idem: IdempotencyKey): Promise<CreateOutcome> {
    const keys = this.keys;
    const now = this.clock.now();
    const slot = keys.slot(idem.scope, idem.key);
    const id = keys.liveId(slot, now);
    const made = id === undefined ? undefined : this.index.get(id);
    if (made !== undefined) {
      // The pet holds the validated NewPet it was made from: its fingerprint is the payload's.
      const same = newPetFingerprint(made) === idem.fingerprint;
      return Promise.resolve(same ? { kind: 'replayed', stored: storedPet(made) } : MISMATCH);
    }
    if (keys.isPending(slot)) return Promise.resolve(IN_FLIGHT);
    keys.setPending(slot, true);
    const key = { slot, record: keyRecord(idem, now) };
    return submit<StoredPet>((op) => this.run(op), (s) => ({ kind: 'create', input, key, ...s })).then(
      (stored): CreateOutcome => {
        keys.setPending(slot, false);
        return { kind: 'created', stored };
      },
      (err: unknown) => {
        keys.setPending(slot, false);
        throw err;
      },
    );
  }

  seed(pets: ReadonlyArray<SeedPet>): Promise<StoredPet[]> {
    return submit((op) => this.run(op), (s) => {
      checkSeedInput(pets);
      return { kind: 'seed', input: pets, ...s };
    });
  }

  reset(): Promise<void> {
    return submit((op) => this.run(op), (s) => ({ kind: 'reset', ...s }));
  }

  /** The pets, next id and live keys as they are now (taken at the call), copied in chunks. */
  captureSnapshot(): Promise<StoreSnapshot> {
    return copyState(this.index.state(), this.keys, this.clock.now());
  }

  /**
   * Puts a snapshot back: the new state is built aside in chunks first (prepareRestore),
   * then swapped in at once (commitRestore), by the store's own writer where it has one (the
   * file store, durably). `now`: the wall time the keys' ages count from, the clock's reading
   * at the swap (default now; a restore that also puts back a clock offset passes the time
   * that offset gives).
   */
  async restoreSnapshot(snapshot: StoreSnapshot, alongside?: () => void, now = this.clock.now()): Promise<void> {
    const s = snapshot as LocalSnapshot;
    if (s.state === undefined || s.keys === undefined || !(s.keys.ages instanceof Float64Array)) throw new TypeError('not a snapshot of this kind of store');
    const prepared = await prepareRestore(s, now);
    await this.commitRestore(s, prepared, () => {
      alongside?.();
      this.index.restore(prepared.lists, s.nextId);
      this.keys.replace(prepared.keys);
    });
  }

  /** Makes a restore durable where the store is, then calls `apply` (the memory store: at once). */
  protected commitRestore(_snapshot: LocalSnapshot, _prepared: PreparedRestore, apply: () => void): Promise<void> {
    apply();
    return Promise.resolve();
  }

  abstract close(): Promise<void>;

  /** Carries out (or queues) one write operation, settling it when done. */
  protected abstract run(op: Op): void;
}
