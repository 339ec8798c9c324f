// What a thrown value says, for messages and decisions: its errno-style code, its message.

/** The errno-style code of a Node I/O error, or undefined for anything else. */
export function errorCode(err: unknown): string | undefined {
  if (err instanceof Error && 'code' in err && typeof err.code === 'string') return err.code;
  return undefined;
}

/** A short description of any thrown value, for log fields and error messages. */
export function describeError(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
