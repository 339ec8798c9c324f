// The server's face: startPetstore and its contract.
export { StartError } from './contract.js';
export type { HarnessClock, Peers, JournalPage, JournalQuery, JournalRequest, LogFunction, PetstoreHandle, StartErrorKind, StartOptions } from './contract.js';
export { startPetstore, startWithConfig } from './start.js';
