// The store's face: the PetStore interface (contract.ts), its errors, the two in-process implementations and PostgreSQL.
export type {
  CreateOutcome, IdempotencyKey, ListQuery, LocalPetStore, PageVersion, PetStore, SeedPet, StoredPet,
} from './contract.js';
export { newPetFingerprint } from './idempotency.js';
export { hasPageVersion } from './contract.js';
export { CreateOutcomeUnknownError, IdsExhaustedError, StoreBusyError, StoreInputError, StoreOpenError, StoreUnavailableError, StoreUnreachableError } from './errors.js';
export { openMemoryStore } from './memory.js';
export type { MemoryStoreOptions } from './memory.js';
export { openFileStore } from './file/index.js';
export type { DiskOp, FileStoreOptions, StoreObserver } from './file/index.js';
export { DEFAULT_LOCK_STALE_MS, MAX_LOCK_STALE_MS, MIN_LOCK_STALE_MS } from './file/index.js';
// The data file's lock, also taken by `keys` around its change of the config file.
export { acquireLock, LockHeldError } from './file/index.js';
export type { DataLock } from './file/index.js';
export { isPostgresUrl, openPostgresStore, redactUrl } from './postgres/index.js';
export type { PostgresStore, PostgresStoreOptions } from './postgres/index.js';
export { canSnapshot } from './contract.js';
export type { SnapshotStore, StoreSnapshot } from './contract.js';
export { ReadCachedStore, DEFAULT_MAX_BYTES as READ_CACHE_MAX_BYTES } from './postgres/read-cache.js';
export type { ReadCacheOptions } from './postgres/read-cache.js';
// What kept strings and Buffers cost, for the caches bounded in bytes.
export { BUFFER_OVERHEAD, bufferBytes, ownedBuffer, ownedString, stringBytes } from './memory-cost.js';
