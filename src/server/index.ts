// The server's face: startPetstore and its contract.
export { StartError } from './contract.js';
export type { HarnessClock, JournalPage, JournalQuery, JournalRequest, LogFunction, PetstoreHandle, StartErrorKind, StartOptions } from './contract.js';
export { startPetstore, startWithConfig } from './start.js';
export { WorkerPeers } from './peers.js';
export type { Peers } from './peers.js';
export { ASK_TIMEOUT_MS, isPrimaryMessage, isWorkerMessage } from './cluster-protocol.js';
export type { PrimaryMessage, WorkerMessage } from './cluster-protocol.js';
