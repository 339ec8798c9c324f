// The admin harness of one service, wired: its faults (shared between workers with
// --workers), request journal, clock and snapshots, the reset of everything, what
// /__admin acts on (AdminControl) and what the embedder's handle offers.
import { ApiError, type ServiceClock } from '../core/index.js';
import { MemoryLimiter, type Limiter } from '../limits/index.js';
import { canSnapshot, type PetStore } from '../store/index.js';
import type { AdminControl, SnapshotControl } from './admin-routes.js';
import { acrossWorkers } from './across-workers.js';
import type { NamespaceControl, Peers } from './contract.js';
import { Faults } from './faults.js';
import { RequestJournal, countSlices, journalEntry, mergeSlices, parseJournalFilter, type JournalEntry } from './journal.js';
import { SharedFaults } from './shared-faults.js';
import { Snapshots, snapshotsUnavailable } from './snapshots.js';

export interface HarnessInput {
  readonly clock: ServiceClock;
  /** From harnessFaults(peers). */
  readonly faults: Faults;
  /** The journal's size (entries); 0 records nothing. */
  readonly journalSize: number;
  /** A worker's line to the others (--workers N); undefined when alone. */
  readonly peers: Peers | undefined;
  readonly store: PetStore;
  readonly keyLimiter: Limiter;
  readonly addressLimiter: Limiter;
  /** The pets are in PostgreSQL (no snapshots). */
  readonly postgres: boolean;
  /** The root's namespaces, when on. */
  readonly namespaces?: NamespaceControl;
}

/** A journal filter given as an object, as the query of GET /__admin/requests would carry it (values as strings or numbers). */
export type JournalQueryObject = object;

export interface Harness {
  /** What the /__admin routes act on. */
  readonly control: AdminControl;
  /** This process's request journal, which the request path records into. */
  readonly journal: RequestJournal;
  readonly faults: Faults;
  /**
   * Empty store, limits and bans cleared, faults cleared, journal emptied, clock back to real
   * time. The limits go first: in Redis they are the part that can fail, and clearing them
   * harms nothing if the rest then fails. A failure is a 503 that says what was done.
   */
  reset(): Promise<void>;
  /** Before the port is taken: a worker takes over the faults the other workers have armed. */
  ready(): Promise<void>;
  /** The service is closing: a request waiting out an injected delay is served now. */
  stop(): void;
  /** handle.journal(): as GET /__admin/requests; a bad filter rejects with a RangeError. */
  requests(filter: JournalQueryObject): Promise<{ requests: JournalEntry[]; dropped: number }>;
  /** handle.snapshot(name). */
  snapshot(name: string): Promise<{ name: string; pets: number }>;
  /** handle.restore(name). */
  restore(name: string): Promise<void>;
}

/**
 * The faults of this process, shared with the other workers when there are peers. Made as the
 * backends open, so that a worker hears the others' sets while it starts.
 */
export function harnessFaults(peers: Peers | undefined): Faults {
  return peers === undefined ? new Faults() : new SharedFaults(peers);
}

export function openHarness(h: HarnessInput): Harness {
  const { clock, faults, peers, store, keyLimiter, addressLimiter } = h;
  // The ring grows as entries come, up to its size; it records only while the config names
  // an admin key and a journal size above 0.
  const journal = new RequestJournal(h.journalSize);
  const workers = acrossWorkers(clock, journal, peers);
  const snapshots = snapshotsFor(h);
  const reset = async (): Promise<void> => {
    let step = 'keys';
    try {
      await keyLimiter.reset();
      step = 'addresses';
      await addressLimiter.reset();
    } catch (err) {
      throw new ApiError('service_unavailable', step === 'keys'
        ? `The reset failed while clearing the rate limits (${messageOf(err)}): some keys' limits may have been cleared; pets, per-address limits and faults are unchanged. Retry later.`
        : `The reset failed while clearing the per-address limits (${messageOf(err)}): the keys' limits were cleared, some per-address limits may have been; pets and faults are unchanged. Retry later.`,
      { 'retry-after': '5' });
    }
    try {
      await store.reset();
    } catch (err) {
      throw new ApiError('service_unavailable', `The reset failed while emptying the store (${messageOf(err)}): the rate limits were cleared, the pets may still be there, faults are unchanged. Retry later.`, { 'retry-after': '5' });
    }
    faults.clear();
    clock.reset();
    await workers.shareOffset();
    await workers.clearJournal();
    await keyLimiter.flush().catch((err: unknown) => {
      throw new ApiError('service_unavailable', `The store, rate limits and faults were reset, but the limits file could not be saved (${messageOf(err)}): a restart now would bring the old limits back. Retry later.`, { 'retry-after': '5' });
    });
  };
  const control: AdminControl = {
    reset, seed: (pets) => store.seed(pets), faults,
    faultsShared: faults instanceof SharedFaults ? () => faults.shared() : undefined,
    journal: {
      query: async (filter) => mergeSlices(await workers.slices(filter), filter),
      count: async (filter) => countSlices(await workers.slices(filter), filter),
      clear: () => workers.clearJournal(),
    },
    clock: {
      now: () => clock.now(),
      get offsetMs() {
        return clock.offsetMs;
      },
      advance: (ms) => workers.advanceClock(ms),
    },
    snapshots,
    namespaces: h.namespaces,
  };
  return {
    control,
    journal,
    faults,
    reset,
    async ready() {
      if (faults instanceof SharedFaults) await faults.shared();
    },
    stop: () => faults.stop(),
    async requests(filter) {
      const parsed = parseJournalFilter(journalQuery(filter));
      if (parsed instanceof ApiError) throw new RangeError(parsed.message);
      const page = await control.journal.query(parsed);
      if (page instanceof ApiError) throw new RangeError(page.message);
      return { requests: page.records.map(journalEntry), dropped: page.dropped };
    },
    async snapshot(name) {
      if (typeof snapshots === 'string') throw new Error(snapshots);
      const saved = await snapshots.save(name);
      if (saved instanceof ApiError) throw new Error(saved.message);
      return saved;
    },
    async restore(name) {
      if (typeof snapshots === 'string') throw new Error(snapshots);
      const done = await snapshots.restore(name);
      if (done instanceof ApiError) throw new Error(done.message);
    },
  };
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function journalQuery(filter: JournalQueryObject): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(filter) as Array<[string, unknown]>) if (value !== undefined) out[name] = String(value);
  return out;
}

/** Snapshots over this process's store and limiters, or why they cannot be had (a 501's message). */
function snapshotsFor(h: HarnessInput): SnapshotControl | string {
  if (h.postgres) return snapshotsUnavailable('the pets are in PostgreSQL, whose state is not this process\'s to copy').message;
  if (h.peers !== undefined) return snapshotsUnavailable('the service runs with --workers, and each worker holds only part of the rate-limit state').message;
  const { store, keyLimiter, addressLimiter } = h;
  if (!(keyLimiter instanceof MemoryLimiter) || !(addressLimiter instanceof MemoryLimiter)) {
    return snapshotsUnavailable('the rate limits are kept in Redis, whose state is not this process\'s to copy').message;
  }
  if (!canSnapshot(store)) return snapshotsUnavailable('this store cannot take snapshots').message;
  return new Snapshots({ store, limiters: [keyLimiter, addressLimiter], faults: h.faults, clock: h.clock });
}
