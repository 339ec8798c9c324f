// The store URL: postgres://user:password@host:port/database?options. Petstore reads its own
// options from the query and removes them; anything else in it (application_name, ...) goes
// to postgres.js and the server as a startup parameter, unchanged.
//
// Nothing petstore needs is sent as a startup parameter: a transaction-mode pooler
// (PgBouncer as it ships, Supavisor, RDS Proxy) refuses or drops most of them. The timeouts
// are set per transaction instead (pool.ts), and statements are not prepared unless the URL
// asks for it (`prepare=true`), since a prepared statement lives on one server connection
// and a transaction pooler hands the next transaction another one.

import { readFileSync } from 'node:fs';
import { checkServerIdentity, type PeerCertificate } from 'node:tls';

/**
 * TLS as libpq's sslmode says it: `disable` (or none given): plain; `allow`, `prefer`: as
 * postgres.js does them; `require`: encrypted, the server not verified (verified as
 * `verify-ca` when a CA file is named, as libpq does); `verify-ca`: the certificate chain
 * verified against the CA; `verify-full`: and the host name of the URL against the
 * certificate. The CA is `sslrootcert` (a PEM file; `system`: the system's CAs, which needs
 * verify-full), else Node's own list plus NODE_EXTRA_CA_CERTS. `sslcert` and `sslkey`: a
 * client certificate and its (unencrypted) key, PEM files.
 */
export type SslOption = false | 'allow' | 'prefer' | {
  readonly rejectUnauthorized: boolean;
  readonly ca?: string;
  readonly cert?: string;
  readonly key?: string;
  readonly checkServerIdentity?: (host: string, cert: PeerCertificate) => Error | undefined;
};

export interface PostgresSettings {
  /** The URL handed to the driver. */
  readonly driverUrl: string;
  /** The URL without its password, for logs and messages. */
  readonly shown: string;
  /** Connections in this process's pool (`max`, default 4). */
  readonly poolSize: number;
  /**
   * How long the engine may stay silent before petstore asks whether it is there at all
   * (`query_timeout`): a statement fails as unreachable only when a fresh connection gets no
   * answer in this time either; then the pool is replaced.
   */
  readonly queryTimeoutMs: number;
  /** The most one statement may run, enforced by the server (`statement_timeout`, ms). */
  readonly statementTimeoutMs: number;
  /** An IPv6 literal host, given to the driver apart from the URL (it cannot parse one). */
  readonly hosts?: { readonly host: string[]; readonly port: number[] };
  /** Seconds to open one connection (`connect_timeout`, postgres.js's own option). */
  readonly connectTimeoutS: number;
  /**
   * Named prepared statements, reused on each connection (`prepare`, default false): faster
   * straight to PostgreSQL, wrong behind a transaction pooler.
   */
  readonly prepare: boolean;
  /** The driver's `ssl` option (see SslOption). */
  readonly ssl: SslOption;
  /** The sslmode in force, for the `store opened` line (`disable` when none was given). */
  readonly sslmode: string;
}

export const DEFAULT_POOL_SIZE = 4;
export const DEFAULT_QUERY_TIMEOUT_MS = 5000;
export const DEFAULT_CONNECT_TIMEOUT_S = 5;
export const DEFAULT_STATEMENT_TIMEOUT_MS = 30_000;

/** True for the URLs the store accepts (the scheme only; the rest is checked at open). */
export function isPostgresUrl(url: string): boolean {
  return /^postgres(?:ql)?:\/\//i.test(url);
}

/** The URL without its password. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password !== '') u.password = '***';
    return u.href;
  } catch {
    // Not a URL: say nothing of it beyond the scheme, since it may hold a password.
    return `${url.split(':')[0] ?? ''}://(not a valid URL)`;
  }
}

/** Reads the settings; throws an Error with a message naming the offending part. */
export function parseSettings(url: string): PostgresSettings {
  if (!isPostgresUrl(url)) throw new Error('the store URL must start with postgres:// or postgresql://');
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new Error('the store URL is not a valid URL');
  }
  // The driver decodes these with decodeURIComponent, which says only "URI malformed".
  for (const [part, raw] of [['user name', u.username], ['password', u.password], ['database name', u.pathname]] as const) {
    try {
      decodeURIComponent(raw);
    } catch {
      throw new Error(`the store URL's ${part} has a bad percent-encoding (a % must be followed by two hex digits; write a literal % as %25)`);
    }
  }
  const poolSize = intParam(u, 'max', DEFAULT_POOL_SIZE, 1, 100);
  const queryTimeoutMs = intParam(u, 'query_timeout', DEFAULT_QUERY_TIMEOUT_MS, 100, 600_000);
  const statementTimeoutMs = intParam(u, 'statement_timeout', DEFAULT_STATEMENT_TIMEOUT_MS, 100, 3_600_000);
  const connectTimeoutS = intParam(u, 'connect_timeout', DEFAULT_CONNECT_TIMEOUT_S, 1, 600);
  const prepare = boolParam(u, 'prepare', false);
  const host = u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname;
  const { ssl, sslmode } = sslOption(u, host);
  // Ours alone: none of them reaches the server as a startup parameter.
  for (const name of OWN_PARAMS) u.searchParams.delete(name);
  let hosts: PostgresSettings['hosts'];
  if (u.hostname.startsWith('[')) {
    hosts = { host: [u.hostname.slice(1, -1)], port: [u.port === '' ? 5432 : Number(u.port)] };
  }
  return { driverUrl: u.href, shown: redactUrl(url), poolSize, queryTimeoutMs, statementTimeoutMs, connectTimeoutS, prepare, ssl, sslmode, ...(hosts ? { hosts } : {}) };
}

const SSL_MODES = ['disable', 'allow', 'prefer', 'require', 'verify-ca', 'verify-full'];
/** libpq's TLS options petstore reads (and removes: the server does not know them). */
const SSL_PARAMS = ['sslmode', 'sslrootcert', 'sslcert', 'sslkey'];
/** Of postgres.js, passed through. */
const DRIVER_SSL_PARAMS = ['sslnegotiation'];

function sslOption(u: URL, host: string): { ssl: SslOption; sslmode: string } {
  for (const name of [...u.searchParams.keys()]) {
    if (name.startsWith('ssl') && !SSL_PARAMS.includes(name) && !DRIVER_SSL_PARAMS.includes(name)) {
      throw new Error(`the store URL's ${name} is not supported (TLS options: ${SSL_PARAMS.join(', ')}; a client key must be unencrypted)`);
    }
  }
  const one = (name: string): string | undefined => {
    const values = u.searchParams.getAll(name);
    if (values.length > 1) throw new Error(`the store URL's ${name} must be given once`);
    return values[0];
  };
  const rootcert = one('sslrootcert');
  const certFile = one('sslcert');
  const keyFile = one('sslkey');
  let mode = one('sslmode');
  for (const name of SSL_PARAMS) u.searchParams.delete(name);
  if (mode !== undefined && !SSL_MODES.includes(mode)) {
    throw new Error(`the store URL's sslmode must be one of ${SSL_MODES.join(', ')}`);
  }
  if (rootcert === 'system') {
    // As libpq: the system's CAs are trusted only with the host name checked.
    if (mode !== undefined && mode !== 'verify-full') throw new Error("the store URL's sslrootcert=system needs sslmode=verify-full (or no sslmode)");
    mode = 'verify-full';
  }
  if ((certFile === undefined) !== (keyFile === undefined)) throw new Error("the store URL's sslcert and sslkey go together: name both files or neither");
  const encrypted = mode === 'require' || mode === 'verify-ca' || mode === 'verify-full';
  if (!encrypted && (rootcert !== undefined || certFile !== undefined)) {
    throw new Error(`the store URL's sslrootcert, sslcert and sslkey need sslmode=verify-full (or verify-ca, require)${mode === undefined ? '' : `, not ${mode}`}`);
  }
  if (mode === undefined || mode === 'disable') return { ssl: false, sslmode: 'disable' };
  if (mode === 'allow' || mode === 'prefer') return { ssl: mode, sslmode: mode };
  const ca = rootcert === undefined || rootcert === 'system' ? undefined : pemFile('sslrootcert', rootcert, 'CERTIFICATE');
  const client = certFile === undefined || keyFile === undefined ? {} : {
    cert: pemFile('sslcert', certFile, 'CERTIFICATE'),
    key: pemFile('sslkey', keyFile, 'PRIVATE KEY'),
  };
  // require with a CA file named is verify-ca (libpq's rule).
  const effective = mode === 'require' && ca !== undefined ? 'verify-ca' : mode;
  if (effective === 'require') return { ssl: { rejectUnauthorized: false, ...client }, sslmode: mode };
  return {
    ssl: {
      rejectUnauthorized: true,
      ...(ca === undefined ? {} : { ca }),
      ...client,
      // verify-ca: the chain only. verify-full: the URL's host (a name, or an IP address
      // against the certificate's IP entries), whatever name the driver gave the handshake.
      checkServerIdentity: effective === 'verify-ca' ? () => undefined : (_name, cert) => checkServerIdentity(host, cert),
    },
    sslmode: effective,
  };
}

/** A PEM file's text; an Error naming the option and the file when it cannot be used. */
function pemFile(option: string, path: string, kind: 'CERTIFICATE' | 'PRIVATE KEY'): string {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new Error(`the store URL's ${option} ${path} cannot be read: ${e.code === 'ENOENT' ? 'no such file' : e.code === 'EACCES' ? 'permission denied' : e.message}`);
  }
  if (!new RegExp(`-----BEGIN [A-Z ]*${kind}-----`).test(text)) {
    throw new Error(`the store URL's ${option} ${path} holds no PEM ${kind === 'CERTIFICATE' ? 'certificate' : 'private key'} (-----BEGIN ${kind}-----)`);
  }
  if (kind === 'PRIVATE KEY' && /ENCRYPTED/.test(text)) {
    throw new Error(`the store URL's ${option} ${path} is encrypted: petstore takes no passphrase; give it an unencrypted copy readable only by its user`);
  }
  return text;
}

/** The URL's options petstore reads itself. */
const OWN_PARAMS = ['max', 'query_timeout', 'statement_timeout', 'connect_timeout', 'prepare'];

function boolParam(u: URL, name: string, fallback: boolean): boolean {
  const values = u.searchParams.getAll(name);
  if (values.length === 0) return fallback;
  if (values.length > 1 || !['true', 'false'].includes(values[0] as string)) {
    throw new Error(`the store URL's ${name} must be given once, true or false`);
  }
  return values[0] === 'true';
}

function intParam(u: URL, name: string, fallback: number, min: number, max: number): number {
  const values = u.searchParams.getAll(name);
  if (values.length === 0) return fallback;
  const raw = values[0] as string;
  const n = /^[0-9]{1,7}$/.test(raw) ? Number(raw) : NaN;
  if (values.length > 1 || !(n >= min && n <= max)) {
    throw new Error(`the store URL's ${name} must be given once, an integer from ${min} to ${max}`);
  }
  return n;
}
