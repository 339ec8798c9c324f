// One error type for every way a start can fail, so that code which starts the service (the
// command line, an embedder, a test harness) catches one class and can still tell the causes
// apart by `kind`. ConfigError and StoreOpenError are StartErrors.

/**
 * What stopped a start:
 * - `config`: the config file or object is missing, not JSON, or not valid;
 * - `data`: the data file cannot be used (its directory cannot be made, it is corrupt,
 *   unreadable, or another process holds it);
 * - `limits`: the saved limiter state beside the data file cannot be read or is corrupt;
 * - `seed`: the pets to add at start are not valid (or their ids cannot be honoured);
 * - `listen`: the port is in use, not permitted, or the address is not local.
 */
export type StartErrorKind = 'config' | 'data' | 'limits' | 'seed' | 'listen';

/**
 * A start failure, with one clear sentence for the operator that names the file or the port
 * (`message`), and its cause as a field (`kind`). `startPetstore` rejects with nothing else,
 * and when it rejects nothing is left listening or locked.
 */
export class StartError extends Error {
  override name = 'StartError';
  /** What failed; see StartErrorKind. */
  readonly kind: StartErrorKind;
  constructor(kind: StartErrorKind, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.kind = kind;
  }
}

/** `err` as a StartError of `kind` (unchanged when it already is one), its message kept. */
export function asStartError(kind: StartErrorKind, err: unknown): StartError {
  if (err instanceof StartError) return err;
  return new StartError(kind, err instanceof Error ? err.message : String(err), { cause: err });
}
