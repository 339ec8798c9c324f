// postgres.js (the npm package `postgres`), loaded only when a store URL is given: it is an
// optional peer dependency, external to the bundle, so the default service has no runtime
// dependency. The few calls the store makes are typed here, not taken from the driver's
// declarations, so that nothing in petstore's own types needs the package installed.

export type SqlRow = Readonly<Record<string, unknown>>;

/** A connection pool of postgres.js, or a transaction of one (`sql.begin`). */
export interface Sql {
  unsafe(query: string, params?: readonly unknown[], options?: { prepare?: boolean }): Promise<SqlRow[]>;
}

export interface SqlPool extends Sql {
  begin<T>(work: (tx: Sql) => Promise<T>): Promise<T>;
  /** Waits up to `timeout` seconds for running queries, then closes every connection. */
  end(options?: { timeout?: number }): Promise<void>;
}

export type PostgresFactory = (url: string, options: Readonly<Record<string, unknown>>) => SqlPool;

/** The driver is not installed where the bundle can import it from. */
export class DriverMissingError extends Error {
  override readonly name = 'DriverMissingError';
}

export const INSTALL_HINT = 'npm install postgres';

/** Imports postgres.js. The specifier stays a literal: esbuild leaves it as is (external). */
export async function loadPostgres(): Promise<PostgresFactory> {
  let mod: unknown;
  try {
    mod = await import('postgres');
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code === 'ERR_MODULE_NOT_FOUND' && /['"]postgres['"]/.test(e.message)) {
      throw new DriverMissingError(`the PostgreSQL driver is not installed: run "${INSTALL_HINT}" where petstore is installed`);
    }
    throw err;
  }
  return (mod as { default: PostgresFactory }).default;
}
