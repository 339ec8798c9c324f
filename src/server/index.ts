// The server's face: startPetstore and its contract.
export { StartError } from './contract.js';
export type { LogFunction, PetstoreHandle, StartErrorKind, StartOptions } from './contract.js';
export { startPetstore, startWithConfig } from './start.js';
