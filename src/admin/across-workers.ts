// The harness across the workers of --workers N: a clock move reaches every worker before it
// resolves (or says that some did not confirm), a reset's first two steps are each taken by
// every worker before the next (the clock back, then the limits cleared by each worker:
// harness.ts), a journal query gathers every worker's matching entries and bounds them as one
// journal, a count that waits is woken by a matching recording in any worker, and a clear
// empties every worker's ring. Alone (no peers) each of these is this process's own.
import { randomUUID } from 'node:crypto';
import { ApiError, MAX_CLOCK_OFFSET_MS, type ServiceClock } from '../core/index.js';
import type { Peers } from './contract.js';
import type { JournalFilter, JournalWait } from './journal-filter.js';
import { boundRings, countSlices, type JournalSlice, type RequestJournal, type RingSlice, type WaitedCount } from './journal.js';

/** A journal-slice ask between workers: the filter, and the moment every slice is cut at. */
interface SliceQuery {
  readonly filter: JournalFilter;
  readonly before: number;
}

interface WorkerSlice extends RingSlice {
  /** The worker's process id: slices are merged in this order. */
  readonly worker: number;
}

/** A count waiting in one worker, watched in the others: they say when they record a match. */
interface Watch {
  readonly id: string;
  readonly filter: JournalFilter;
  /** How long the others keep watching at most (the asker says when it is done before). */
  readonly ms: number;
}

/** How long a clock move or a reset waits for every other worker to confirm its step. */
export const CONFIRM_MS = 2_000;
/** How long the workers may take to clear the limits in Redis (a SCAN over every key). */
export const CLEAR_LIMITS_MS = 15_000;

/** The journal and clock of every worker, as one. */
export interface AcrossWorkers {
  /** Every worker's slice of the journal for `filter`, bounded as one journal, in one order whichever worker asks. */
  slices(filter: JournalFilter): Promise<JournalSlice[]>;
  /** Resolves once at least `wait.atLeast` entries match in every worker together, or the time is up. */
  waitJournal(filter: JournalFilter, wait: JournalWait): Promise<WaitedCount | ApiError>;
  /** Empties every worker's journal. */
  clearJournal(): Promise<void>;
  /**
   * Moves every worker's clock forward by ms; a 503 ApiError when some worker did not confirm
   * within CONFIRM_MS (it moves when it gets to the message; a retry would move it twice).
   */
  advanceClock(ms: number): Promise<void>;
  /**
   * A reset's first step: every worker's clock back to real time, this one's first. Resolves
   * with how many other workers did not confirm within CONFIRM_MS (0: every process is on the
   * reset clock, and nothing it charges from now on is stamped on the old one).
   */
  resetClock(): Promise<number>;
  /** Puts the offset back in every worker (a reset that could not start). */
  restoreOffset(ms: number): Promise<void>;
  /**
   * A reset's second step: every worker clears its limits (in Redis, through its own connection,
   * after whatever it sent before; its in-process copies too). Rejects with why, when this
   * worker's or another's clear failed or did not answer within CLEAR_LIMITS_MS.
   */
  resetLimits(): Promise<void>;
  /** The service is closing: counts waiting here are answered now. */
  stop(): void;
}

/** Answers the other workers' asks about this one's journal and clock, and asks them in turn. */
export function acrossWorkers(clock: ServiceClock, journal: RequestJournal, peers: Peers | undefined, clearLimits: () => Promise<void>): AcrossWorkers {
  /** The other workers' counts this worker records for: their id, and how to stop. */
  const watched = new Map<string, () => void>();
  /** This worker's counts waiting: their id, and what a match elsewhere does. */
  const waiting = new Map<string, { readonly hit: () => void; readonly end: () => void }>();
  let stopped = false;
  if (peers !== undefined) {
    peers.answer('journal-slice', (query) => {
      const { filter, before } = query as SliceQuery;
      return { ...journal.ringSlice(filter, before), worker: process.pid } satisfies WorkerSlice;
    });
    peers.answer('journal-clear', () => {
      journal.clear();
      return true;
    });
    peers.answer('journal-watch', (payload) => {
      const w = payload as Watch;
      if (typeof w?.id !== 'string' || typeof w.ms !== 'number') return false;
      const stopWatching = journal.watch(w.filter, () => peers.tell('journal-hit', w.id));
      // Never past the asker's own time (a lost unwatch ends here).
      const timer = setTimeout(() => unwatch(w.id), w.ms + 1_000);
      timer.unref?.();
      watched.set(w.id, () => {
        clearTimeout(timer);
        stopWatching();
      });
      return true;
    });
    const unwatch = (id: unknown): void => {
      if (typeof id !== 'string') return;
      watched.get(id)?.();
      watched.delete(id);
    };
    peers.onTold('journal-unwatch', unwatch);
    peers.onTold('journal-hit', (id) => {
      if (typeof id === 'string') waiting.get(id)?.hit();
    });
    peers.answer('clock-offset', (offset) => {
      if (typeof offset === 'number') clock.restoreOffset(offset);
      return true;
    });
    peers.answer('clock-reset', () => {
      clock.reset();
      return true;
    });
    peers.answer('limits-reset', () => clearLimits().then(() => true, (err: unknown) => ({ error: messageOf(err) })));
    // An advance is passed on as the step, not the offset it led to: advances answered by
    // different workers at the same time then add up in every worker, whatever the order.
    peers.answer('clock-advance', (ms) => {
      if (typeof ms !== 'number') return false;
      try {
        clock.advance(ms);
      } catch {
        // Past the total bound only through advances that raced each other: at the bound.
        clock.restoreOffset(MAX_CLOCK_OFFSET_MS);
      }
      return true;
    });
  }

  /**
   * Each worker's slice is cut at the same moment: entries answered up to the millisecond of
   * the ask, taken once that millisecond has passed (an entry's time is that of its answer,
   * so none of them can come later). Without the cut the other workers, which answer a
   * little later than this one takes its own slice, could give a page their newest entries
   * and not this worker's of the same moment, which would then sort before the page's last
   * entry and be skipped by a harness paging forward with since. And the slices go in one
   * order, whichever worker is asked (by process id), so that entries of the same
   * millisecond keep one order from page to page. Then the rings are bounded as one journal
   * (boundRings): the newest `capacity` entries of the service, none older than an evicted one.
   */
  const slices = async (filter: JournalFilter): Promise<JournalSlice[]> => {
    if (peers === undefined) return [journal.slice(filter)];
    const before = clock.now();
    // At most a few ms (a reset meanwhile takes the clock back: not waited for).
    for (let i = 0; i < 5 && clock.now() <= before; i++) await new Promise((resolve) => setTimeout(resolve, 1));
    const own: WorkerSlice = { ...journal.ringSlice(filter, before), worker: process.pid };
    const others = await peers.ask('journal-slice', { filter, before } satisfies SliceQuery);
    const all = [own, ...(others.filter((o) => o !== undefined && o !== null) as WorkerSlice[])];
    return boundRings(all.sort((a, b) => a.worker - b.worker), journal.capacity);
  };

  const waitJournal = async (filter: JournalFilter, wait: JournalWait): Promise<WaitedCount | ApiError> => {
    const monotonic = (): number => clock.monotonic();
    if (peers === undefined) return journal.wait(filter, wait.atLeast, wait.timeoutMs, monotonic);
    const started = monotonic();
    const counted = async (): Promise<number | ApiError> => countSlices(await slices(filter), filter);
    const first = await counted();
    if (first instanceof ApiError || first >= wait.atLeast || wait.timeoutMs === 0 || stopped) {
      return first instanceof ApiError ? first : { count: first, met: first >= wait.atLeast, waitedMs: Math.round(monotonic() - started) };
    }
    const id = randomUUID();
    return new Promise((resolve) => {
      let finished = false;
      let counting = false;
      let again = false;
      let count = first;
      const finish = (result: WaitedCount | ApiError): void => {
        if (finished) return;
        finished = true;
        clearTimeout(timer);
        stopLocal();
        waiting.delete(id);
        peers.tell('journal-unwatch', id);
        resolve(result);
      };
      // A match anywhere: counted again over every worker (one count at a time; matches
      // meanwhile make one more).
      const recount = async (): Promise<void> => {
        if (counting) {
          again = true;
          return;
        }
        counting = true;
        do {
          again = false;
          const n = await counted();
          if (finished) return;
          if (n instanceof ApiError) return finish(n);
          count = n;
          if (n >= wait.atLeast) return finish({ count: n, met: true, waitedMs: Math.round(monotonic() - started) });
        } while (again);
        counting = false;
      };
      const stopLocal = journal.watch(filter, () => void recount());
      waiting.set(id, { hit: () => void recount(), end: () => finish({ count, met: false, waitedMs: Math.round(monotonic() - started) }) });
      const timer = setTimeout(() => {
        void counted().then((n) => finish(n instanceof ApiError ? n : { count: n, met: n >= wait.atLeast, waitedMs: Math.round(monotonic() - started) }));
      }, wait.timeoutMs);
      // Once every other worker watches, one more count: a match recorded before it watched is seen.
      void peers.ask('journal-watch', { id, filter, ms: wait.timeoutMs } satisfies Watch).then(() => recount());
    });
  };

  return {
    slices,
    waitJournal,
    async clearJournal() {
      journal.clear();
      if (peers !== undefined) await peers.ask('journal-clear');
    },
    async advanceClock(ms) {
      clock.advance(ms);
      if (peers === undefined) return;
      const { missing } = await peers.askEvery('clock-advance', ms, CONFIRM_MS);
      if (missing > 0) {
        throw new ApiError('service_unavailable', `The clock moved ${ms} ms in this worker and the move was sent to every other one, but ${missing} of them did not confirm it within ${CONFIRM_MS / 1000} s: they move when they get to it. Do not repeat the move (it would add up); GET /__admin/clock shows the offset.`, { 'retry-after': '5' });
      }
    },
    async resetClock() {
      clock.reset();
      if (peers === undefined) return 0;
      return (await peers.askEvery('clock-reset', undefined, CONFIRM_MS)).missing;
    },
    async restoreOffset(ms) {
      clock.restoreOffset(ms);
      if (peers !== undefined) await peers.ask('clock-offset', ms);
    },
    async resetLimits() {
      if (peers === undefined) return clearLimits();
      const [own, others] = await Promise.all([
        clearLimits().then(() => undefined, (err: unknown) => messageOf(err)),
        peers.askEvery('limits-reset', undefined, CLEAR_LIMITS_MS),
      ]);
      const failed = others.answers.flatMap((a) => {
        if (a === true) return [];
        const error = (a as { error?: unknown } | undefined)?.error;
        return [typeof error === 'string' ? error : 'a worker could not clear its limits'];
      });
      const why = [
        ...(own === undefined ? [] : [own]),
        ...failed.filter((e) => e !== own),
        ...(others.missing > 0 ? [`${others.missing} worker(s) did not answer within ${CLEAR_LIMITS_MS / 1000} s`] : []),
      ];
      if (why.length > 0) throw new Error(why.join('; '));
    },
    stop() {
      stopped = true;
      journal.stop();
      for (const w of [...waiting.values()]) w.end();
      for (const stopWatching of watched.values()) stopWatching();
      watched.clear();
    },
  };
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
