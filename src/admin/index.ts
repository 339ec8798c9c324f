// The admin harness's face: the /__admin operations, faults, the request journal, snapshots,
// faults shared between workers, and what the server wires them with.
export type { NamespaceControl, NamespaceListing, Peers } from './contract.js';
export { ADMIN_MAX_BODY_BYTES, ADMIN_ROUTES, parseClockAdvance, parseSeedPets } from './admin-routes.js';
export type { AdminContext, AdminControl, AdminRoute, ClockControl, JournalControl, SnapshotControl } from './admin-routes.js';
export { ANY_OPERATION, CONNECTION_FAULTS, MAX_FAULT_COUNT, MAX_FAULT_DELAY_MS, faultError, parseFault, seededRandom } from './fault-spec.js';
export type { ConnectionFault, DelayRange, FaultSpec } from './fault-spec.js';
export { Faults } from './faults.js';
export type { ArmedFault, Fault, FaultHit, FaultListing, SavedFault } from './faults.js';
export { DEFAULT_JOURNAL_LIMIT, JOURNAL_MAX_BODY_BYTES, JOURNAL_MAX_BYTES, MAX_JOURNAL_LIMIT, RequestJournal, countSlices, journalEntry, journalPageJson, mergeSlices, parseJournalFilter, queryObject } from './journal.js';
export type { JournalEntry, JournalFilter, JournalRecord, JournalSlice, QueryInput } from './journal.js';
export { MAX_SNAPSHOTS, Snapshots, snapshotNameError, snapshotsUnavailable } from './snapshots.js';
export type { SnapshotInfo, SnapshotParts } from './snapshots.js';
export { SharedFaults } from './shared-faults.js';
export { harnessFaults, openHarness } from './harness.js';
export type { Harness, HarnessInput, JournalQueryObject } from './harness.js';
export { NAMESPACE_PREFIX, Namespaces, NoNamespaces, namespaceNameError } from './namespaces.js';
export type { NamespaceSelect, NamespaceWorld, NamespacesOptions, WorldState } from './namespaces.js';
