// What the real-engine tests share (PostgreSQL, Redis, nginx, haproxy): where the binaries
// are, the line a test prints when they are absent, and the cleanup that runs however a test
// file ends.
import { accessSync, constants, readdirSync, readFileSync, rmSync } from 'node:fs';
import { delimiter, join } from 'node:path';

export type Engine = 'postgres' | 'redis' | 'nginx' | 'haproxy';

/** The Debian package that brings each engine's server binaries. */
export const PACKAGES: Readonly<Record<Engine, string>> = { postgres: 'postgresql', redis: 'redis-server', nginx: 'nginx', haproxy: 'haproxy' };

export interface EngineBinaries {
  readonly engine: Engine;
  readonly available: boolean;
  /** Absolute paths by binary name, for the binaries found. */
  readonly bin: Readonly<Record<string, string>>;
  /** Why it is not available (the binaries missing, or no user to run it as). */
  readonly missing: readonly string[];
}

export interface AvailabilityOptions {
  /**
   * Directories to search, PATH-style. Default: Debian's newest /usr/lib/postgresql/N/bin, then
   * $PATH, then /usr/sbin and /sbin (where Debian puts nginx and haproxy). Tests pass a directory without the binaries to see the skip path.
   */
  readonly searchPath?: string;
}

const NEEDED: Readonly<Record<Engine, readonly string[]>> = {
  // psql creates the test database; pg_ctl is not needed, we signal the postmaster ourselves.
  postgres: ['initdb', 'postgres', 'psql'],
  redis: ['redis-server'],
  nginx: ['nginx'],
  haproxy: ['haproxy'],
};

function defaultDirs(): string[] {
  const dirs: string[] = [];
  try {
    // Debian keeps the server binaries out of $PATH, one directory per major version.
    const versions = readdirSync('/usr/lib/postgresql').filter((v) => /^\d+$/.test(v)).sort((a, b) => Number(b) - Number(a));
    for (const v of versions) dirs.push(`/usr/lib/postgresql/${v}/bin`);
  } catch {
    // No /usr/lib/postgresql: not Debian's packaging, $PATH alone decides.
  }
  return [...dirs, ...(process.env.PATH ?? '').split(delimiter).filter(Boolean), '/usr/sbin', '/sbin'];
}

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The first directory holding all of `names` (they must match one another's version). */
function findTogether(names: readonly string[], dirs: readonly string[]): Record<string, string> | undefined {
  for (const dir of dirs) {
    if (names.every((n) => executable(join(dir, n)))) return Object.fromEntries(names.map((n) => [n, join(dir, n)]));
  }
  return undefined;
}

/** The user PostgreSQL runs as when we are root (it refuses to run as root). */
export interface PosixUser {
  readonly name: string;
  readonly uid: number;
  readonly gid: number;
}

export function lookupUser(name: string): PosixUser | undefined {
  try {
    for (const line of readFileSync('/etc/passwd', 'utf8').split('\n')) {
      const f = line.split(':');
      if (f[0] === name && f.length >= 4) return { name, uid: Number(f[2]), gid: Number(f[3]) };
    }
  } catch {
    // No /etc/passwd: no such user.
  }
  return undefined;
}

export const isRoot = (): boolean => process.getuid?.() === 0;

export function binaries(engine: Engine, opts: AvailabilityOptions = {}): EngineBinaries {
  const dirs = opts.searchPath !== undefined ? opts.searchPath.split(delimiter).filter(Boolean) : defaultDirs();
  const names = NEEDED[engine];
  const found = findTogether(names, dirs);
  const missing: string[] = [];
  if (found === undefined) {
    missing.push(...names.filter((n) => !dirs.some((d) => executable(join(d, n)))));
    if (missing.length === 0) missing.push(`${names.join(', ')} in one directory`);
  }
  if (engine === 'postgres' && isRoot() && lookupUser('postgres') === undefined) missing.push('a postgres user (PostgreSQL refuses to run as root)');
  return { engine, available: missing.length === 0, bin: found ?? {}, missing };
}

/** Which engines can be started here. */
export function availability(opts: AvailabilityOptions = {}): Readonly<Record<Engine, EngineBinaries>> {
  return { postgres: binaries('postgres', opts), redis: binaries('redis', opts), nginx: binaries('nginx', opts), haproxy: binaries('haproxy', opts) };
}

/**
 * undefined when every engine in `engines` can be started; otherwise the one line a test file
 * prints and passes as its `skip` reason: what is skipped, what is missing, the install command.
 */
export function skipReason(what: string, engines: readonly Engine[], opts: AvailabilityOptions = {}): string | undefined {
  const absent = engines.map((e) => binaries(e, opts)).filter((b) => !b.available);
  if (absent.length === 0) return undefined;
  const missing = absent.flatMap((b) => b.missing).join(', ');
  const packages = absent.map((b) => PACKAGES[b.engine]).join(' ');
  return `skipped: ${what} (needs ${missing}; install with: apt-get install -y ${packages})`;
}

const announced = new Set<string>();

/**
 * For a test file: the `skip` option of its tests. When an engine is missing it also writes the
 * skip line to stderr, once per file, so `npm test` shows it without a line per test.
 */
export function skipUnless(what: string, engines: readonly Engine[], opts: AvailabilityOptions = {}): string | false {
  const reason = skipReason(what, engines, opts);
  if (reason === undefined) return false;
  if (!announced.has(reason)) {
    announced.add(reason);
    process.stderr.write(`${reason}\n`);
  }
  return reason;
}

/** What `t.after` needs; node:test's TestContext and SuiteContext both fit. */
export interface AfterHook {
  after(fn: () => unknown): void;
}

/** A server that must not outlive the test process: `hardStop` runs synchronously on exit. */
export interface Disposable {
  hardStop(): void;
}

const live = new Set<Disposable>();
let hooked = false;

function onExit(): void {
  for (const d of live) {
    try {
      d.hardStop();
    } catch (err) {
      process.stderr.write(`test cleanup failed: ${(err as Error).message}\n`);
      process.exitCode = 1;
    }
  }
  live.clear();
}

/**
 * Tracks a server until `release`: if the test process exits first (a failed assertion, a
 * forgotten close), the exit hook kills it and removes its directory.
 */
export function track(d: Disposable): () => void {
  if (!hooked) {
    hooked = true;
    process.on('exit', onExit);
  }
  live.add(d);
  return () => {
    live.delete(d);
  };
}

/** rm -rf that reports rather than throws; directories of killed servers may be busy briefly. */
export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 50 });
}

/** A throwaway server of a test engine (PostgreSQL, Redis), as the start functions return it. */
export interface EngineServer {
  /** The URL petstore is given (`postgres://...`, `redis://...`). */
  readonly url: string;
  readonly port: number;
  /** The temp directory the server runs in. */
  readonly dir: string;
  readonly running: boolean;
  /** A clean stop; the directory stays, so start() can bring the same server back. */
  stop(): Promise<void>;
  /** SIGKILL to every process of the server at once, like a power cut of the server alone. */
  kill(): Promise<void>;
  /** SIGSTOP: connections stay open and nothing answers (a hung server). */
  pause(): void;
  /** SIGCONT after pause(). */
  resume(): void;
  /** Starts again on the same port and directory. */
  start(): Promise<void>;
  restart(): Promise<void>;
  /** Stops and removes the directory; safe to call twice. */
  close(): Promise<void>;
  /** What the server logged so far (the tail), for assertion messages. */
  log(): string;
}
