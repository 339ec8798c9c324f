// The three ways the store reports trouble. The HTTP layer maps them to status codes:
// StoreUnavailableError -> 503, StoreInputError -> 400, IdsExhaustedError -> 507; StoreOpenError
// stops the start.
import { StartError } from '../core/index.js';

/** The store refused to open: corrupt or unreadable data, or another live process holds it. */
export class StoreOpenError extends StartError {
  override name = 'StoreOpenError';
  /** The data file, as it was given to openFileStore. */
  readonly file: string;
  constructor(file: string, message: string, options?: { cause?: unknown }) {
    super('data', message, options);
    this.file = file;
  }
}

/**
 * A write could not be made durable (disk full, I/O error, directory removed...), or the
 * store is closed. Nothing acknowledged was lost; a later attempt may succeed.
 */
export class StoreUnavailableError extends Error {
  override readonly name: string = 'StoreUnavailableError';
}

/**
 * The database did not answer: connection lost or refused, or no answer in time. The
 * operation was not acknowledged; a create that timed out may still have been committed
 * (see docs/store.md, PostgreSQL). The store logs the outage and the recovery itself.
 */
export class StoreUnreachableError extends StoreUnavailableError {
  override readonly name: string = 'StoreUnreachableError';
}

/**
 * The database connection was lost after a create was sent, and the database could not be
 * asked whether it committed: the pet may or may not exist. A retry with the same
 * Idempotency-Key learns the truth without creating twice. Answered 503, with its own message.
 */
export class CreateOutcomeUnknownError extends StoreUnreachableError {
  override readonly name = 'CreateOutcomeUnknownError';
}

/** Too many writes are already waiting for the disk: refused at once, nothing done. */
export class StoreBusyError extends StoreUnavailableError {
  override readonly name = 'StoreBusyError';
}

/**
 * No id is left: ids stay within the safe integer range, and the largest has been given
 * (a seed can give it). Retrying cannot help; only a reset frees ids.
 */
export class IdsExhaustedError extends Error {
  override readonly name = 'IdsExhaustedError';
}

/** seed() was given ids the store cannot honour. */
export class StoreInputError extends Error {
  override readonly name = 'StoreInputError';
}
