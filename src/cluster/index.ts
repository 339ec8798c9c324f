// The face of `--workers N`: the primary, a worker's run, and what the command line gives them.
export type { ClusterOptions, CommandLine, Io, SeedPets, SignalHandlers } from './contract.js';
export { runPrimary } from './primary.js';
export { isClusterWorker, runWorker } from './worker.js';
export { WorkerPeers } from './peers.js';
export type { Channel } from './peers.js';
export { ASK_TIMEOUT_MS, isPrimaryMessage, isWorkerMessage } from './protocol.js';
export type { PrimaryMessage, WorkerMessage } from './protocol.js';
