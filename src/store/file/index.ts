// The durable store's face: snapshot + journal on one data file (see file-store.ts).
export { openFileStore } from './open.js';
export type { FileStoreOptions } from './file-store.js';
export type { StoreObserver } from './data-files.js';
export type { DiskOp } from './disk.js';
export { DEFAULT_LOCK_STALE_MS, MAX_LOCK_STALE_MS, MIN_LOCK_STALE_MS } from './lock.js';
export { LockHeldError } from './lock.js';
export { acquireLock } from './acquire-lock.js';
export type { DataLock } from './lock.js';
