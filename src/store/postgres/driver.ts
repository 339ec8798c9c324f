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

/**
 * When `err` is the server (or a pooler in front of it) refusing petstore's connection, what
 * the operator should change; undefined for anything else. A refusal is an answer, not an
 * outage: waiting does not help, a change of settings does.
 */
export function refusal(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return undefined;
  const message = err instanceof Error ? err.message : '';
  if (/CERT|SELF_SIGNED|UNABLE_TO_|ERR_TLS_|ERR_SSL_/.test(code)) {
    return code === 'ERR_TLS_CERT_ALTNAME_INVALID'
      ? "the server's certificate is not for the host in the store URL: use the name the certificate is for, or sslmode=verify-ca to check the chain only"
      : "to trust the server's certificate, name its CA in the store URL (sslrootcert=/path/to/ca.crt, a PEM file) or in NODE_EXTRA_CA_CERTS, or use sslmode=require to encrypt without verifying";
  }
  const param = /unsupported startup parameter: ?([A-Za-z0-9_.]+)/.exec(message)?.[1]
    ?? (code === '42704' && /configuration parameter/.test(message) ? /"([^"]+)"/.exec(message)?.[1] : undefined);
  if (param !== undefined) {
    return `remove ${param} from the store URL's options: it is sent as a startup parameter, which a pooler in transaction mode refuses; set it for the role instead (ALTER ROLE ... SET ${param} = ...)`;
  }
  if (code.startsWith('28') || /authentication failed|password/i.test(message)) {
    return 'check the user name and password in the store URL (behind a pooler, also its auth_file or auth_query), and that the server (pg_hba.conf) lets this user in from this address';
  }
  if (code === '3D000' || /no such database/i.test(message)) {
    return 'check the database name in the store URL (behind a pooler, its [databases] section)';
  }
  if (code === '53300' || /no more connections allowed|too many connections|max_client_conn/i.test(message)) {
    return "lower the store URL's max (connections per process) or raise the server's max_connections (behind a pooler, its max_client_conn)";
  }
  if (code === '42501') return 'grant the user CONNECT on the database';
  if (code === '08004') return 'the server rejected the connection: its log says why';
  return undefined;
}
