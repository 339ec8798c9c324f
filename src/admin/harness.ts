// The admin harness of one service, wired: its faults (shared between workers with
// --workers), request journal, clock and snapshots, the reset of everything, what
// /__admin acts on (AdminControl) and what the embedder's handle offers.
import { ApiError, type ServiceClock } from '../core/index.js';
import { MemoryLimiter, type Limiter } from '../limits/index.js';
import { canSnapshot, type PetStore } from '../store/index.js';
import type { AdminControl, SnapshotControl } from './admin-routes.js';
import { CONFIRM_MS, acrossWorkers } from './across-workers.js';
import type { NamespaceControl, Peers } from './contract.js';
import { Faults } from './faults.js';
import { RequestJournal, countSlices, mergeSlices } from './journal.js';
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

export interface Harness {
  /** What the /__admin routes act on. */
  readonly control: AdminControl;
  /** This process's request journal, which the request path records into. */
  readonly journal: RequestJournal;
  readonly faults: Faults;
  /**
   * Clock back to real time, limits and bans cleared, empty store, faults cleared, journal
   * emptied, in that order, the first two in every worker before the next (see reset below).
   * A failure is a 503 that says what was done.
   */
  reset(): Promise<void>;
  /** Before the port is taken: a worker takes over the faults the other workers have armed. */
  ready(): Promise<void>;
  /** The service is closing: a request waiting out an injected delay, or a count waiting for entries, is answered now. */
  stop(): void;
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
  /** Clears this process's limiters; a failure says which of the two it was clearing. */
  const clearLimits = async (): Promise<void> => {
    let step: LimitsStep = 'keys';
    try {
      await keyLimiter.reset();
      step = 'addresses';
      await addressLimiter.reset();
    } catch (err) {
      throw new LimitsClearError(step, messageOf(err));
    }
  };
  const workers = acrossWorkers(clock, journal, peers, clearLimits);
  const snapshots = snapshotsFor(h);
  /**
   * One step for every process: no process charges a limit on the old clock once the limits
   * are cleared. So the clock goes back first, in every worker, each confirming (when one
   * does not within CONFIRM_MS, the clock is put back and nothing is cleared); from then on
   * every charge is stamped on the reset clock. Then each worker clears the limits through its
   * own Redis connection: a charge it sent on the old clock before taking the reset clock is
   * ahead of its clear on that connection, so Redis runs it first and the clear removes it;
   * each worker's in-process copy (the fallback used while Redis does not answer) is cleared
   * too. The limits go before the store: in Redis they are the part that can fail, and
   * clearing them harms nothing if the rest then fails (a failure there puts the clock back).
   */
  const reset = async (): Promise<void> => {
    const offset = clock.offsetMs;
    const missing = await workers.resetClock();
    if (missing > 0) {
      await workers.restoreOffset(offset);
      throw new ApiError('service_unavailable', `The reset did not happen: ${missing} worker(s) did not confirm taking the clock back within ${CONFIRM_MS / 1000} s; nothing was cleared and the clock is where it was. Retry later.`, RETRY);
    }
    try {
      await workers.resetLimits();
    } catch (err) {
      await workers.restoreOffset(offset);
      throw new ApiError('service_unavailable', limitsFailure(err, peers !== undefined), RETRY);
    }
    try {
      await store.reset();
    } catch (err) {
      throw new ApiError('service_unavailable', `The reset failed while emptying the store (${messageOf(err)}): the rate limits were cleared and the clock is back at real time, the pets may still be there, faults are unchanged. Retry later.`, RETRY);
    }
    faults.clear();
    await workers.clearJournal();
    await keyLimiter.flush().catch((err: unknown) => {
      throw new ApiError('service_unavailable', `The store, rate limits and faults were reset, but the limits file could not be saved (${messageOf(err)}): a restart now would bring the old limits back. Retry later.`, RETRY);
    });
  };
  const control: AdminControl = {
    reset, seed: (pets) => store.seed(pets), faults,
    faultsShared: faults instanceof SharedFaults ? () => faults.shared() : undefined,
    journal: {
      query: async (filter) => mergeSlices(await workers.slices(filter), filter),
      count: async (filter) => countSlices(await workers.slices(filter), filter),
      wait: (filter, wait) => workers.waitJournal(filter, wait),
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
    stop() {
      faults.stop();
      workers.stop();
    },
  };
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

const RETRY = { 'retry-after': '5' } as const;

type LimitsStep = 'keys' | 'addresses';

/** A limiter's reset failed: which limiter it was clearing, and why. */
class LimitsClearError extends Error {
  readonly step: LimitsStep;
  constructor(step: LimitsStep, why: string) {
    super(why);
    this.step = step;
  }
}

/** What a reset that failed while clearing the limits says was done (the clock was put back). */
function limitsFailure(err: unknown, workers: boolean): string {
  const why = messageOf(err);
  if (workers) {
    return `The reset failed while clearing the rate limits (${why}): some keys' and per-address limits may have been cleared; pets and faults are unchanged, and the clock is where it was. Retry later.`;
  }
  return err instanceof LimitsClearError && err.step === 'addresses'
    ? `The reset failed while clearing the per-address limits (${why}): the keys' limits were cleared, some per-address limits may have been; pets and faults are unchanged, and the clock is where it was. Retry later.`
    : `The reset failed while clearing the rate limits (${why}): some keys' limits may have been cleared; pets, per-address limits and faults are unchanged, and the clock is where it was. Retry later.`;
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
