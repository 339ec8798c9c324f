// The store contract: what the HTTP API needs from wherever pets live. It imports nothing of
// the implementations, so a new backend (a database, say) is one new file that implements it.
//
// Reads may answer with a value or a promise: an in-process store answers at once, and the
// request pipeline awaits only when it was handed a promise, so that path stays synchronous.
import type { NewPet, Pet, PetStatus } from '../core/index.js';

/** A pet and its JSON text (keys in the order id, name, categoryId, status). */
export interface StoredPet {
  readonly pet: Readonly<Pet>;
  readonly json: string;
}

export interface ListQuery {
  status?: PetStatus;
  limit: number;
  afterId?: number;
}

/**
 * An Idempotency-Key sent with a create (draft-ietf-httpapi-idempotency-key-header). A store
 * keeps it with the pet in the same durable write (a journal line, a transaction), for its
 * retention, so that no crash keeps one without the other.
 */
export interface IdempotencyKey {
  /** Whose key: the hex SHA-256 digest of the API key that sent it (two customers may use one value). */
  readonly scope: string;
  /** The key as the client sent it, unquoted: 1..255 printable ASCII characters. */
  readonly key: string;
  /** Of the validated NewPet (newPetFingerprint): equal fingerprints are the same payload. */
  readonly fingerprint: string;
}

/**
 * What a create with an Idempotency-Key came to:
 * - created: the key was new (or expired); the pet was made durable with the key.
 * - replayed: the key is live with the same fingerprint: the pet created then, unchanged.
 * - mismatch: the key is live with another fingerprint; nothing was done (422).
 * - in_flight: a create with the key is still being written; nothing was done (409).
 */
export type CreateOutcome =
  | { readonly kind: 'created'; readonly stored: StoredPet }
  | { readonly kind: 'replayed'; readonly stored: StoredPet }
  | { readonly kind: 'mismatch' }
  | { readonly kind: 'in_flight' };

/** A pet to preload: explicit ids must exceed every existing id, ascending. */
export type SeedPet = NewPet & { id?: number };

export interface PetStore {
  get(id: number): StoredPet | undefined | Promise<StoredPet | undefined>;
  /** Ascending id, ids > afterId, with the status if given, at most limit. */
  list(q: ListQuery): StoredPet[] | Promise<StoredPet[]>;
  /** Assigns the next id; resolves once the pet is durable, and only then is it visible. */
  create(input: NewPet): Promise<StoredPet>;
  /**
   * create(), at most once per live key: the key is stored with the pet in the same durable
   * write, and kept for the store's retention (24 hours unless configured). Only a durable
   * create is remembered: a failed one (rejected, as create) leaves the key free. A store
   * without it answers requests that carry the header with 501 (see routes.ts).
   */
  createIdempotent?(input: NewPet, idempotency: IdempotencyKey): Promise<CreateOutcome>;
  /** Bulk preload in one durable write; explicit ids must exceed every existing id, ascending. */
  seed(pets: ReadonlyArray<SeedPet>): Promise<StoredPet[]>;
  /** Empties the store; ids restart at 1. */
  reset(): Promise<void>;
  /**
   * Waits for pending writes, leaves everything durable, releases what the store holds.
   * Idempotent. Rejects (StoreUnavailableError) only if acknowledged pets could not be left
   * durable.
   */
  close(): Promise<void>;
  /**
   * A store on a server (PostgreSQL): false from the first request found it unreachable (or
   * refused) until it answers again; the store asks it every few hundred ms meanwhile. A store
   * without it is always reachable. For readiness checks.
   */
  readonly reachable?: boolean;
}

/**
 * An optional capability: a version of the stored pets that readers may cache pages by. Only
 * a store that sees every write (one process, one writer) can offer it; the page cache is
 * used only for stores that have it.
 */
export interface PageVersion {
  /** Number of pets. */
  readonly count: number;
  /**
   * Changes when pets already stored may change (a reset); not on appends. Pets are
   * immutable and ids ascend, so a page followed by more pets stays the same within one
   * generation: readers may cache it.
   */
  readonly generation: number;
}

/** A store that holds every pet in this process: synchronous reads, and a page version. */
export interface LocalPetStore extends PetStore, PageVersion {
  get(id: number): StoredPet | undefined;
  createIdempotent(input: NewPet, idempotency: IdempotencyKey): Promise<CreateOutcome>;
  /** Idempotency keys held in memory (live, or expired and not yet swept). */
  readonly idempotencyKeys: number;
  /** O(limit + log n). */
  list(q: ListQuery): StoredPet[];
}

/**
 * A store's pets, next id and live idempotency keys at one moment (a named snapshot of the
 * admin API). The pet objects are the store's own, shared (pets are immutable): a snapshot
 * costs the arrays that point at them, about 8 bytes per pet plus 8 per pet with a status,
 * and its keys. Opaque to everyone but the store that made it.
 */
export interface StoreSnapshot {
  readonly pets: number;
  readonly nextId: number;
  readonly idempotencyKeys: number;
  /** Estimated heap bytes the snapshot holds besides the shared pets. */
  readonly bytes: number;
}

/** A store whose state can be saved and put back (the memory and file stores). */
export interface SnapshotStore {
  /**
   * The state as it is when called (taken synchronously), copied in chunks that yield to the
   * event loop: writes meanwhile do not show in it.
   */
  captureSnapshot(): Promise<StoreSnapshot>;
  /**
   * Puts a snapshot of this store back exactly (pets, next id, keys with the age they had);
   * the file store makes it durable before resolving. Rejects as a write does (503).
   * `alongside` runs in the same synchronous step as the swap, just before it (the rest of a
   * service's state is put back there, so that no request sees half of it). The new state is
   * built aside in chunks before that step; requests meanwhile see the state before.
   * `now`: the wall time the keys' ages count from (the clock's reading at the swap; default
   * the clock's reading when called).
   */
  restoreSnapshot(snapshot: StoreSnapshot, alongside?: () => void, now?: number): Promise<void>;
}

export function canSnapshot(store: PetStore): store is PetStore & SnapshotStore {
  const s = store as Partial<SnapshotStore>;
  return typeof s.captureSnapshot === 'function' && typeof s.restoreSnapshot === 'function';
}

export function hasPageVersion(store: PetStore): store is PetStore & PageVersion {
  const s = store as Partial<PageVersion>;
  return typeof s.generation === 'number' && typeof s.count === 'number';
}
