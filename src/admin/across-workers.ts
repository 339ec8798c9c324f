// The harness across the workers of --workers N: a clock move reaches every worker before it
// resolves, a journal query gathers every worker's matching entries, and a clear empties
// every worker's ring. Alone (no peers) each of these is this process's own.
import { MAX_CLOCK_OFFSET_MS, type ServiceClock } from '../core/index.js';
import type { Peers } from './contract.js';
import type { JournalFilter, JournalSlice, RequestJournal } from './journal.js';

/** A journal-slice ask between workers: the filter, and the moment every slice is cut at. */
interface SliceQuery {
  readonly filter: JournalFilter;
  readonly before: number;
}

interface WorkerSlice extends JournalSlice {
  /** The worker's process id: slices are merged in this order. */
  readonly worker: number;
}

/** This worker's entries answered up to `before` (service clock ms), tagged with its process id. */
function workerSlice(slice: JournalSlice, before: number): WorkerSlice {
  return { records: slice.records.filter((r) => r.at <= before), dropped: slice.dropped, worker: process.pid };
}

/** The journal and clock of every worker, as one. */
export interface AcrossWorkers {
  /** Every worker's slice of the journal for `filter`, in one order whichever worker asks. */
  slices(filter: JournalFilter): Promise<JournalSlice[]>;
  /** Empties every worker's journal. */
  clearJournal(): Promise<void>;
  /** Moves every worker's clock forward by ms. */
  advanceClock(ms: number): Promise<void>;
  /** Gives every other worker this one's clock offset (after a reset). */
  shareOffset(): Promise<void>;
}

/** Answers the other workers' asks about this one's journal and clock, and asks them in turn. */
export function acrossWorkers(clock: ServiceClock, journal: RequestJournal, peers: Peers | undefined): AcrossWorkers {
  if (peers !== undefined) {
    peers.answer('journal-slice', (query) => {
      const { filter, before } = query as SliceQuery;
      return workerSlice(journal.slice(filter), before);
    });
    peers.answer('journal-clear', () => {
      journal.clear();
      return true;
    });
    peers.answer('clock-offset', (offset) => {
      if (typeof offset === 'number') clock.restoreOffset(offset);
      return true;
    });
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
  return {
    /**
     * Each worker's slice is cut at the same moment: entries answered up to the millisecond of
     * the ask, taken once that millisecond has passed (an entry's time is that of its answer,
     * so none of them can come later). Without the cut the other workers, which answer a
     * little later than this one takes its own slice, could give a page their newest entries
     * and not this worker's of the same moment, which would then sort before the page's last
     * entry and be skipped by a harness paging forward with since. And the slices go in one
     * order, whichever worker is asked (by process id), so that entries of the same
     * millisecond keep one order from page to page.
     */
    async slices(filter) {
      if (peers === undefined) return [journal.slice(filter)];
      const before = clock.now();
      // At most a few ms (a reset meanwhile takes the clock back: not waited for).
      for (let i = 0; i < 5 && clock.now() <= before; i++) await new Promise((resolve) => setTimeout(resolve, 1));
      const own = workerSlice(journal.slice(filter), before);
      const others = await peers.ask('journal-slice', { filter, before } satisfies SliceQuery);
      const all = [own, ...(others.filter((o) => o !== undefined && o !== null) as WorkerSlice[])];
      return all.sort((a, b) => a.worker - b.worker);
    },
    async clearJournal() {
      journal.clear();
      if (peers !== undefined) await peers.ask('journal-clear');
    },
    async advanceClock(ms) {
      clock.advance(ms);
      if (peers !== undefined) await peers.ask('clock-advance', ms);
    },
    async shareOffset() {
      if (peers !== undefined) await peers.ask('clock-offset', clock.offsetMs);
    },
  };
}
