// The admin harness's face: the /__admin operations, faults, the request journal, snapshots,
// faults shared between workers, faults per request (Prefer), the embedder's handle's admin
// features, namespaces, and what the server wires them with.
export type { NamespaceControl, NamespaceListing, Peers } from './contract.js';
export { ADMIN_MAX_BODY_BYTES, ADMIN_ROUTES, parseClockAdvance, parseSeedPets } from './admin-routes.js';
export type { AdminContext, AdminControl, AdminRoute, ClockControl, JournalControl, SnapshotControl } from './admin-routes.js';
export { ANY_OPERATION, CONNECTION_FAULTS, MAX_FAULT_COUNT, MAX_FAULT_DELAY_MS, errorCodeOf, faultAnswer, parseFault, seededRandom } from './fault-spec.js';
export type { ConnectionFault, DelayRange, FaultAnswer, FaultMatch, FaultSpec } from './fault-spec.js';
export { Faults, faultSlot } from './faults.js';
export type { ArmedFault, Fault, FaultHit, FaultListing, FaultRequest, SavedFault } from './faults.js';
export { JOURNAL_MAX_BYTES, RequestJournal, countSlices, mergeSlices } from './journal.js';
export type { JournalSlice, WaitedCount } from './journal.js';
export { ENTRY_OVERHEAD_BYTES, JOURNAL_MAX_BODY_BYTES, JOURNAL_MAX_HEADER_CHARS, entryBytes, journalEntry, journalPageJson, queryObject, recordOf } from './journal-entry.js';
export type { Exchanged, JournalEntry, JournalRecord } from './journal-entry.js';
export { DEFAULT_JOURNAL_LIMIT, MAX_JOURNAL_AT_LEAST, MAX_JOURNAL_LIMIT, MAX_JOURNAL_WAIT_MS, parseJournalFilter } from './journal-filter.js';
export type { JournalFilter, JournalWait, QueryInput } from './journal-filter.js';
export { parsePrefer } from './prefer.js';
export type { Preferred } from './prefer.js';
export { MAX_SNAPSHOTS, Snapshots, snapshotNameError, snapshotsUnavailable } from './snapshots.js';
export type { SnapshotInfo, SnapshotParts } from './snapshots.js';
export { SharedFaults } from './shared-faults.js';
export { harnessFaults, openHarness } from './harness.js';
export type { Harness, HarnessInput } from './harness.js';
export { AdminOffError, handleAdmin } from './handle.js';
export type { AdminSettings, FaultsHandle, HandleAdmin, JournalFilterObject, JournalHandle, JournalPageOut, SnapshotsHandle } from './handle.js';
export { NAMESPACE_PREFIX, Namespaces, NoNamespaces, namespaceNameError } from './namespaces.js';
export type { NamespaceSelect, NamespaceWorld, NamespacesOptions, WorldState } from './namespaces.js';
