// A real, throwaway PostgreSQL for tests: initdb into a temp directory, one postmaster on a free
// loopback port, trust authentication, nothing left behind. Stop, kill, pause and start again on
// the same port and data directory, for outage tests.
import { spawnSync, execFile } from 'node:child_process';
import { chownSync, mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { binaries, isRoot, lookupUser, removeDir, track, type AfterHook, type AvailabilityOptions, type EngineServer, type PosixUser } from './engines.js';
import { engineProcess, startTracked } from './engine-process.js';

export interface PostgresOptions extends AvailabilityOptions {
  /** Registers `close()` with `t.after`, so the server goes when the test ends, pass or fail. */
  readonly t?: AfterHook;
  /** The database created for the test (default `petstore`). */
  readonly database?: string;
  /** Extra `-c name=value` server settings. */
  readonly settings?: Readonly<Record<string, string>>;
  /** How long one start may take before it is an error (default 30 s: two busy cores). */
  readonly startTimeoutMs?: number;
}

/** A PostgreSQL server: stop() is a fast shutdown (committed data kept), start() recovers after kill(). */
export interface PostgresServer extends EngineServer {
  /** `postgres://postgres@127.0.0.1:PORT/DATABASE` (trust authentication, no password). */
  readonly url: string;
  readonly database: string;
  /** Runs SQL through psql in the test database; resolves with its unaligned output. */
  psql(sql: string): Promise<string>;
}

/**
 * A directory under the temp dir that the postgres user can reach: when we are root the server
 * runs as postgres, so every ancestor must be searchable by others (mkdtemp's own 0700 dirs,
 * like a TMPDIR made by another test, are not).
 */
function baseDir(): string {
  const base = tmpdir();
  if (!isRoot()) return base;
  for (let d = base; ; d = dirname(d)) {
    if ((statSync(d).mode & 0o001) === 0) return '/tmp';
    if (dirname(d) === d) return base;
  }
}

/** Environment without PG* variables, so the developer's own settings cannot redirect psql. */
function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { LC_ALL: 'C' };
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('PG') && k !== 'LC_ALL') env[k] = v;
  return env;
}

function run(file: string, args: readonly string[], opts: { user?: PosixUser; timeoutMs?: number } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(file, args, {
      env: cleanEnv(),
      timeout: opts.timeoutMs ?? 120_000,
      ...(opts.user ? { uid: opts.user.uid, gid: opts.user.gid } : {}),
    }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${file} ${args.join(' ')} failed: ${stderr.trim() || err.message}`));
      else resolve(stdout);
    });
  });
}

/** The SysV shared memory id in postmaster.pid (line 7: key, id), or undefined. */
function shmId(dataDir: string): string | undefined {
  try {
    const line = readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[6] ?? '';
    const id = line.trim().split(/\s+/)[1];
    return id !== undefined && /^\d+$/.test(id) ? id : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Resolves once SysV shared memory segment `id` no longer exists (marked for removal, it goes
 * when its last process detaches), or after `timeoutMs`; at once where /proc/sysvipc is absent.
 */
async function shmGone(id: string, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    let table: string;
    try {
      table = readFileSync('/proc/sysvipc/shm', 'utf8');
    } catch {
      return;
    }
    // "key shmid perms size cpid lpid nattch ...", one segment a line after the header.
    const present = table.split('\n').slice(1).some((line) => line.trim().split(/\s+/)[1] === id);
    if (!present || Date.now() >= until) return;
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * The postmaster and its children. Every backend makes itself a process-group leader
 * (InitPostmasterChild), so signalling the postmaster's group does not reach them: we list
 * them from /proc instead. The postmaster comes first, so a SIGSTOP stops it forking more.
 */
function serverProcesses(postmaster: number): number[] {
  const children: number[] = [];
  try {
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
        // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
        const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
        if (ppid === postmaster) children.push(Number(entry));
      } catch {
        // Exited while we looked.
      }
    }
  } catch {
    // No /proc (not Linux): the postmaster alone.
  }
  return [postmaster, ...children];
}

/**
 * One initdb per test process: the first server's cluster is made in a template directory,
 * and every server copies it (`cp -a`, owner and modes kept). initdb is most of the cost of a
 * start (about 2 s of CPU against 1 s for the copy), and a test file often starts several.
 * The template goes when the process exits.
 */
let template: Promise<string> | undefined;

function templateCluster(bin: Record<'initdb', string>, user: PosixUser | undefined): Promise<string> {
  template ??= (async () => {
    const dir = mkdtempSync(join(baseDir(), 'petstore-pg-template-'));
    track({ hardStop: () => removeDir(dir) });
    if (user) chownSync(dir, user.uid, user.gid);
    const data = join(dir, 'data');
    await run(bin.initdb, ['-D', data, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--locale=C', '--no-sync'], { ...(user ? { user } : {}), timeoutMs: 180_000 });
    return data;
  })();
  // A failed initdb is not cached: the next start tries again (and reports its own error).
  template.catch(() => { template = undefined; });
  return template;
}

/** Starts initdb + postgres; see PostgresServer. Throws with the log when it cannot start. */
export async function startPostgres(opts: PostgresOptions = {}): Promise<PostgresServer> {
  const found = binaries('postgres', opts);
  if (!found.available) throw new Error(`PostgreSQL is not available: ${found.missing.join(', ')}`);
  const bin = found.bin as Record<'initdb' | 'postgres' | 'psql', string>;
  const user = isRoot() ? lookupUser('postgres') : undefined;
  const database = opts.database ?? 'petstore';
  const startTimeoutMs = opts.startTimeoutMs ?? 30_000;

  const dir = mkdtempSync(join(baseDir(), 'petstore-pg-'));
  const dataDir = join(dir, 'data');
  let closed = false;
  const proc = engineProcess({
    name: 'PostgreSQL',
    file: bin.postgres,
    env: cleanEnv(),
    ...(user ? { user } : {}),
    args: (port) => [
      '-D', dataDir, '-p', String(port), '-h', '127.0.0.1', '-k', dir,
      // Tests only: no fsync makes commits fast. A killed server still keeps every commit (the
      // OS page cache survives it); only a crash of the machine could lose or corrupt data.
      '-c', 'fsync=off',
      '-c', 'lc_messages=C',
      ...Object.entries(opts.settings ?? {}).flatMap(([k, v]) => ['-c', `${k}=${v}`]),
    ],
    readyLine: /ready to accept connections/,
    portTaken: /could not bind|could not create any TCP\/IP sockets/,
    // A fast shutdown: sessions end, committed data is kept.
    stopSignal: 'SIGINT',
    members: serverProcesses,
    startTimeoutMs,
  });

  // A killed postmaster leaves its small SysV segment behind; remove it (the kernel frees it
  // when the last backend detaches) so killed servers do not pile up segments.
  const dropShm = (): void => {
    const id = shmId(dataDir);
    if (id !== undefined) spawnSync('ipcrm', ['-m', id], { stdio: 'ignore' });
  };
  const { release, hardStop } = await startTracked(proc, dir, {
    async before() {
      if (user) chownSync(dir, user.uid, user.gid);
      await run('cp', ['-a', await templateCluster(bin, user), dataDir], { timeoutMs: 180_000 });
    },
    cleanUp: dropShm,
  });
  const port = proc.port;

  const psql = (sql: string, db = database): Promise<string> =>
    run(bin.psql, ['-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', '-d', db, '-c', sql]);

  try {
    await psql(`CREATE DATABASE ${JSON.stringify(database)}`, 'postgres');
  } catch (err) {
    release();
    hardStop();
    throw err;
  }

  const server: PostgresServer = {
    get url() {
      return `postgres://postgres@127.0.0.1:${port}/${database}`;
    },
    port,
    database,
    dir,
    get running() {
      return proc.running;
    },
    stop: () => proc.stop(15_000),
    async kill() {
      await proc.kill(15_000);
      const id = shmId(dataDir);
      dropShm();
      // The postmaster is gone, but a backend killed with it (or forked just before it died,
      // after the list was read) may still hold the segment for a moment; a start meanwhile
      // fails with "pre-existing shared memory block is still in use". Wait until it is gone.
      if (id !== undefined) await shmGone(id, 15_000);
    },
    pause: () => proc.pause(),
    resume: () => proc.resume(),
    async start() {
      if (closed) throw new Error('this PostgreSQL was closed');
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
    psql: (sql) => psql(sql),
    log: () => proc.log(),
  };
  opts.t?.after(() => server.close());
  return server;
}
