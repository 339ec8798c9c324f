// A real, throwaway PgBouncer for tests, in front of a test PostgreSQL: transaction pooling as
// Debian ships it (no ignore_startup_parameters), clients authenticated by PgBouncer with a
// password (scram-sha-256, from its own auth file), PgBouncer itself let in by the test
// server's trust authentication. A temp folder, a free loopback port, nothing left behind.
// stop()/kill()/start() on the same port, for outage tests.
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, chownSync, constants, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isRoot, lookupUser, removeDir, track, type AfterHook, type EngineServer } from './engines.js';
import { freePort } from './free-port.js';

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

const LOG_LIMIT = 64 * 1024;
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
  let port = 0;
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  let logText = '';
  let closed = false;
  const running = (): boolean => child !== undefined && child.exitCode === null && child.signalCode === null;
  const hardStop = (): void => {
    if (running()) child?.kill('SIGKILL');
    removeDir(dir);
  };
  const release = track({ hardStop });

  const writeConfig = (): void => {
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
    const ini = [
      '[databases]',
      `${opts.database} = host=127.0.0.1 port=${opts.serverPort} dbname=${opts.database} user=postgres`,
      '[pgbouncer]',
      ...Object.entries(settings).map(([k, v]) => `${k} = ${v}`),
      '',
    ].join('\n');
    writeFileSync(join(dir, 'pgbouncer.ini'), ini);
    writeFileSync(join(dir, 'userlist.txt'), `"postgres" "${PGBOUNCER_PASSWORD}"\n`, { mode: 0o600 });
    if (user) {
      chownSync(join(dir, 'pgbouncer.ini'), user.uid, user.gid);
      chownSync(join(dir, 'userlist.txt'), user.uid, user.gid);
    }
  };

  const launch = async (): Promise<void> => {
    writeConfig();
    const proc = spawn(PGBOUNCER, [join(dir, 'pgbouncer.ini')], {
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(user ? { uid: user.uid, gid: user.gid } : {}),
    });
    child = proc;
    logText = '';
    exited = new Promise((resolve) => proc.once('exit', () => resolve()));
    proc.unref();
    const ready = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`PgBouncer did not start in 30 s:\n${logText}`)), 30_000);
      const onData = (chunk: Buffer): void => {
        logText = (logText + chunk.toString()).slice(-LOG_LIMIT);
        if (/process up/.test(logText)) {
          clearTimeout(timer);
          resolve();
        }
      };
      proc.stdout?.on('data', onData);
      proc.stderr?.on('data', onData);
      proc.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`PgBouncer exited at start (${signal ?? code}):\n${logText}`));
      });
    });
    (proc.stdout as { unref?: () => void } | null)?.unref?.();
    (proc.stderr as { unref?: () => void } | null)?.unref?.();
    try {
      await ready;
    } catch (err) {
      if (running()) proc.kill('SIGKILL');
      throw err;
    }
  };

  const signalAndWait = async (signal: NodeJS.Signals): Promise<void> => {
    if (!running()) return;
    child?.kill(signal);
    let timer: NodeJS.Timeout | undefined;
    const late = await Promise.race([exited.then(() => false), new Promise<boolean>((r) => { timer = setTimeout(() => r(true), 15_000); })]);
    clearTimeout(timer);
    if (late) {
      child?.kill('SIGKILL');
      await exited;
    }
  };

  try {
    for (let attempt = 1; ; attempt++) {
      port = await freePort();
      try {
        await launch();
        break;
      } catch (err) {
        await exited;
        if (attempt >= 5 || !/Address already in use|bind/.test((err as Error).message)) throw err;
      }
    }
  } catch (err) {
    release();
    hardStop();
    throw err;
  }

  const server: PgBouncerServer = {
    get url() {
      return `postgres://postgres:${PGBOUNCER_PASSWORD}@127.0.0.1:${port}/${opts.database}`;
    },
    password: PGBOUNCER_PASSWORD,
    get port() {
      return port;
    },
    dir,
    get running() {
      return running();
    },
    // SIGINT: "safe shutdown" (waits for clients' transactions); SIGTERM: immediate.
    stop: () => signalAndWait('SIGTERM'),
    kill: () => signalAndWait('SIGKILL'),
    pause() {
      if (running()) child?.kill('SIGSTOP');
    },
    resume() {
      if (running()) child?.kill('SIGCONT');
    },
    async start() {
      if (closed) throw new Error('this PgBouncer was closed');
      if (running()) return;
      await launch();
    },
    async restart() {
      await server.stop();
      await server.start();
    },
    async close() {
      if (closed) return;
      closed = true;
      server.resume();
      await server.stop();
      release();
      removeDir(dir);
    },
    log: () => logText,
  };
  opts.t?.after(() => server.close());
  return server;
}
