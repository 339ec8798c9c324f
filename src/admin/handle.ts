// The embedder's handle has every admin feature: what /__admin does over HTTP, the handle
// does with a method (faults, the journal, snapshots; the clock is the handle's own), with the
// same checks (a bad fault or filter rejects with a RangeError carrying the 400's message). A
// feature that is off says so with an AdminOffError instead of answering nothing: a journal
// that records nothing would otherwise read as "the client sent nothing".
import { ApiError } from '../core/index.js';
import { parseFault } from './fault-spec.js';
import type { FaultListing } from './faults.js';
import type { Harness } from './harness.js';
import { journalEntry, type JournalEntry } from './journal-entry.js';
import { parseJournalFilter } from './journal-filter.js';
import type { SnapshotInfo } from './snapshots.js';

/** A handle's call to an admin feature that the config has off (which config field turns it on is in the message). */
export class AdminOffError extends Error {
  override readonly name = 'AdminOffError';
  /** The feature: 'journal', 'faults' or 'namespaces'. */
  readonly feature: string;
  constructor(feature: string, message: string) {
    super(message);
    this.feature = feature;
  }
}

/** What the handle's admin features need to know of the config in force. */
export interface AdminSettings {
  /** The config has `admin` (a key). */
  readonly on: boolean;
  /** admin.journal: entries kept, 0 for none. */
  readonly journal: number;
}

/** A journal filter as an object: the query parameters of GET /__admin/requests (header: "name:value" or a list of them). */
export type JournalFilterObject = object;

export interface JournalPageOut {
  requests: JournalEntry[];
  dropped: number;
}

/** handle.journal: callable as before (a query), with query, count, wait and clear. */
export interface JournalHandle {
  (filter?: JournalFilterObject): Promise<JournalPageOut>;
  query(filter?: JournalFilterObject): Promise<JournalPageOut>;
  count(filter?: JournalFilterObject): Promise<number>;
  wait(filter: JournalFilterObject & { atLeast: number; timeoutMs?: number }): Promise<{ count: number; met: boolean; waitedMs: number }>;
  clear(): Promise<void>;
}

export interface FaultsHandle {
  /** Arms a fault (the body of POST /__admin/faults); resolves with every armed fault. */
  arm(fault: object): Promise<FaultListing[]>;
  list(): FaultListing[];
  clear(): Promise<void>;
}

export interface SnapshotsHandle {
  save(name: string): Promise<{ name: string; pets: number }>;
  restore(name: string): Promise<void>;
  list(): SnapshotInfo[];
  delete(name: string): void;
}

export interface HandleAdmin {
  readonly journal: JournalHandle;
  readonly faults: FaultsHandle;
  readonly snapshots: SnapshotsHandle;
  snapshot(name: string): Promise<{ name: string; pets: number }>;
  restore(name: string): Promise<void>;
}

/**
 * The handle's admin features over `harness`, checked against the config in force at each
 * call (`settings`), with the operationIds a fault or filter may name.
 */
export function handleAdmin(harness: Harness, settings: () => AdminSettings, operations: readonly string[]): HandleAdmin {
  const control = harness.control;
  const journalOn = (): void => {
    const s = settings();
    if (!s.on) throw new AdminOffError('journal', 'The request journal is off: the config has no "admin", so no request is recorded. Start with an admin key in the config ("admin": {"key": ...}).');
    if (s.journal === 0) throw new AdminOffError('journal', 'The request journal is off: the config has "admin": {"journal": 0}, so no request is recorded.');
  };
  const faultsOn = (): void => {
    if (!settings().on) throw new AdminOffError('faults', 'Faults are off: the config has no "admin", so no request would be caught. Start with an admin key in the config ("admin": {"key": ...}).');
  };
  const filterOf = (filter: JournalFilterObject = {}) => {
    const parsed = parseJournalFilter(queryOf(filter), operations);
    if (parsed instanceof ApiError) throw new RangeError(parsed.message);
    return parsed;
  };
  const query = async (filter?: JournalFilterObject): Promise<JournalPageOut> => {
    journalOn();
    const page = await control.journal.query(filterOf(filter));
    if (page instanceof ApiError) throw new RangeError(page.message);
    return { requests: page.records.map(journalEntry), dropped: page.dropped };
  };
  const journal = Object.assign((filter?: JournalFilterObject) => query(filter), {
    query,
    async count(filter?: JournalFilterObject): Promise<number> {
      journalOn();
      const n = await control.journal.count(filterOf(filter));
      if (n instanceof ApiError) throw new RangeError(n.message);
      return n;
    },
    async wait(filter: JournalFilterObject & { atLeast: number; timeoutMs?: number }) {
      journalOn();
      const parsed = parseJournalFilter(queryOf({ timeoutMs: 0, ...filter }), operations, true);
      if (parsed instanceof ApiError) throw new RangeError(parsed.message);
      const waited = await control.journal.wait(parsed.filter, parsed.wait as { atLeast: number; timeoutMs: number });
      if (waited instanceof ApiError) throw new RangeError(waited.message);
      return waited;
    },
    async clear(): Promise<void> {
      journalOn();
      await control.journal.clear();
    },
  }) as JournalHandle;
  const faults: FaultsHandle = {
    async arm(fault) {
      faultsOn();
      const spec = parseFault(fault, operations);
      if (spec instanceof ApiError) throw new RangeError(spec.message);
      control.faults.set(spec);
      await control.faultsShared?.();
      return control.faults.list();
    },
    list() {
      faultsOn();
      return control.faults.list();
    },
    async clear() {
      faultsOn();
      control.faults.clear();
      await control.faultsShared?.();
    },
  };
  const snapshotsOf = () => {
    const s = control.snapshots;
    if (typeof s === 'string') throw new Error(s);
    return s;
  };
  const unwrap = <T>(v: T | ApiError): T => {
    if (v instanceof ApiError) throw new Error(v.message);
    return v;
  };
  const snapshots: SnapshotsHandle = {
    save: async (name) => unwrap(await snapshotsOf().save(name)),
    restore: async (name) => {
      unwrap(await snapshotsOf().restore(name));
    },
    list: () => snapshotsOf().list(),
    delete: (name) => {
      unwrap(snapshotsOf().delete(name));
    },
  };
  return { journal, faults, snapshots, snapshot: snapshots.save, restore: snapshots.restore };
}

/** A filter object as the query of GET /__admin/requests would carry it (values as strings). */
function queryOf(filter: JournalFilterObject): Record<string, string | readonly string[]> {
  const out: Record<string, string | readonly string[]> = {};
  for (const [name, value] of Object.entries(filter) as Array<[string, unknown]>) {
    if (value === undefined) continue;
    out[name] = Array.isArray(value) ? (value as readonly unknown[]).map(String) : String(value);
  }
  return out;
}
