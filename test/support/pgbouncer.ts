// A real, throwaway PgBouncer for tests, in front of a test PostgreSQL: transaction pooling as
// Debian ships it (no ignore_startup_parameters), clients authenticated by PgBouncer with a
// password (scram-sha-256, from its own auth file), PgBouncer itself let in by the test
// server's trust authentication. A temp folder, a free loopback port, nothing left behind.
// stop()/kill()/start() on the same port, for outage tests.
import { accessSync, chownSync, constants, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isRoot, lookupUser, removeDir, type AfterHook, type EngineServer } from './engines.js';
import { engineProcess, startTracked } from './engine-process.js';

export const PGBOUNCER = '/usr/sbin/pgbouncer';

export interface PgBouncerOptions {
  /** Registers `close()` with `t.after`. */
  readonly t?: AfterHook;
  /** The PostgreSQL port PgBouncer connects to, on 127.0.0.1 (a getter: the server may move). */
  readonly serverPort: number;
  /** The database clients name (and PgBouncer's server database). */
  readonly database: string;
  /** Server connections per database and user (`default_pool_size`, default 4). */
  readonly poolSize?: number;
  /** Extra `[pgbouncer]` settings, name = value. */
  readonly settings?: Readonly<Record<string, string>>;
}

export interface PgBouncerServer extends EngineServer {
  /** `postgres://postgres:PASSWORD@127.0.0.1:PORT/DATABASE`. */
  readonly url: string;
  readonly password: string;
}

export const PGBOUNCER_PASSWORD = 'bouncer-secret';

/** undefined when PgBouncer can be started here, else why not (a test's skip reason). */
export function pgbouncerMissing(): string | undefined {
  try {
    accessSync(PGBOUNCER, constants.X_OK);
  } catch {
    return `skipped: needs ${PGBOUNCER} (install with: apt-get install -y pgbouncer)`;
  }
  if (isRoot() && lookupUser('postgres') === undefined) return 'skipped: PgBouncer refuses to run as root and there is no postgres user';
  return undefined;
}

export async function startPgBouncer(opts: PgBouncerOptions): Promise<PgBouncerServer> {
  const user = isRoot() ? lookupUser('postgres') : undefined;
  const dir = mkdtempSync(join(tmpdir().startsWith('/tmp') ? tmpdir() : '/tmp', 'petstore-pgbouncer-'));
  if (user) chownSync(dir, user.uid, user.gid);
  const ini = join(dir, 'pgbouncer.ini');
  let closed = false;

  /** The config for a start on `port` (written before each start: the server's port may have moved). */
  const writeConfig = (port: number): void => {
    const settings: Record<string, string> = {
      listen_addr: '127.0.0.1',
      listen_port: String(port),
      unix_socket_dir: '',
      auth_type: 'scram-sha-256',
      auth_file: join(dir, 'userlist.txt'),
      pool_mode: 'transaction',
      default_pool_size: String(opts.poolSize ?? 4),
      max_client_conn: '500',
      // Quick to notice a restarted server in tests; the defaults are 15 s and more.
      server_login_retry: '1',
      logfile: '',
      pidfile: '',
      admin_users: 'postgres',
      ...opts.settings,
    };
    writeFileSync(ini, [
      '[databases]',
      `${opts.database} = host=127.0.0.1 port=${opts.serverPort} dbname=${opts.database} user=postgres`,
      '[pgbouncer]',
      ...Object.entries(settings).map(([k, v]) => `${k} = ${v}`),
      '',
    ].join('\n'));
    writeFileSync(join(dir, 'userlist.txt'), `"postgres" "${PGBOUNCER_PASSWORD}"\n`, { mode: 0o600 });
    if (user) {
      chownSync(ini, user.uid, user.gid);
      chownSync(join(dir, 'userlist.txt'), user.uid, user.gid);
    }
  };

  const proc = engineProcess({
    name: 'PgBouncer',
    file: PGBOUNCER,
    args: () => [ini],
    prepare: writeConfig,
    ...(user ? { user } : {}),
    readyLine: /process up/,
    portTaken: /Address already in use|bind/,
    // SIGINT: "safe shutdown" (waits for clients' transactions); SIGTERM: immediate.
    stopSignal: 'SIGTERM',
  });
  const { release } = await startTracked(proc, dir);

  const server: PgBouncerServer = {
    get url() {
      return `postgres://postgres:${PGBOUNCER_PASSWORD}@127.0.0.1:${proc.port}/${opts.database}`;
    },
    password: PGBOUNCER_PASSWORD,
    get port() {
      return proc.port;
    },
    dir,
    get running() {
      return proc.running;
    },
    stop: () => proc.stop(15_000),
    kill: () => proc.kill(15_000),
    pause: () => proc.pause(),
    resume: () => proc.resume(),
    async start() {
      if (closed) throw new Error('this PgBouncer was closed');
      await proc.start();
    },
    async restart() {
      await server.stop();
      await server.start();
    },
    async close() {
      if (closed) return;
      closed = true;
      await server.stop();
      release();
      removeDir(dir);
    },
    log: () => proc.log(),
  };
  opts.t?.after(() => server.close());
  return server;
}
