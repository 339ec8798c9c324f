// The server's face: startPetstore and its contract.
export { AdminOffError, StartError } from './contract.js';
export type { FaultInput, HandleFaults, HandleJournal, HandleSnapshots, HarnessClock, NamespaceHandle, Peers, JournalPage, JournalQuery, JournalRequest, LogFunction, PetstoreHandle, StartErrorKind, StartOptions } from './contract.js';
export { startPetstore, startWithConfig } from './start.js';
