// The store's face: the contract, its errors, and the two in-process implementations.
export type { ListQuery, LocalPetStore, PageVersion, PetStore, SeedPet, StoredPet } from './contract.js';
export { hasPageVersion } from './contract.js';
export { StoreBusyError, StoreInputError, StoreOpenError, StoreUnavailableError } from './errors.js';
export { openMemoryStore } from './memory.js';
export { openFileStore } from './file/index.js';
export type { DiskOp, FileStoreOptions, StoreObserver } from './file/index.js';
export { DEFAULT_LOCK_STALE_MS, MAX_LOCK_STALE_MS, MIN_LOCK_STALE_MS } from './file/index.js';
