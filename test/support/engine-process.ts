// One server process of a test engine (PostgreSQL, Redis, nginx, haproxy...), as every engine
// helper runs it: spawned detached on a free loopback port (another when the port is taken
// before the bind), its output kept for assertion messages, ready when its log says so or when a
// probe answers, then stopped cleanly, killed, paused and resumed, and started again on the same
// port. A server that outlives its test file is killed by the exit hook of engines.ts.
import { spawn, type ChildProcess } from 'node:child_process';
import { freePort } from './free-port.js';
import { sleep } from './wait.js';
import { removeDir, track, type PosixUser } from './engines.js';

const LOG_LIMIT = 64 * 1024;

export interface ProcessSpec {
  /** Names the server in errors (`PostgreSQL`, `redis-server`, `nginx`). */
  readonly name: string;
  readonly file: string;
  /** The arguments for a start on `port` (the same port again after a stop). */
  args(port: number): readonly string[];
  /** Runs before each start, e.g. to write a config file naming `port`. */
  prepare?(port: number): void;
  readonly cwd?: string;
  readonly env?: NodeJS.ProcessEnv;
  /** Run as this user (PostgreSQL and PgBouncer refuse to run as root). */
  readonly user?: PosixUser;
  /** Ready when the output matches this... */
  readonly readyLine?: RegExp;
  /** ...or when this resolves true (polled every 20 ms). */
  readyProbe?(port: number): Promise<boolean>;
  /** The output of a start that failed because the port was taken meanwhile. */
  readonly portTaken: RegExp;
  /** The signal of a clean stop, sent to the main process only (default SIGTERM). */
  readonly stopSignal?: NodeJS.Signals;
  /**
   * Every process of the server, the main one first: default its process group. PostgreSQL's
   * backends each lead a group of their own, so its helper lists them from /proc.
   */
  members?(pid: number): readonly number[];
  /** How long one start may take (default 30 s: two busy cores). */
  readonly startTimeoutMs?: number;
}

export interface EngineProcess {
  readonly port: number;
  readonly running: boolean;
  /** The main process id, while running. */
  readonly pid: number | undefined;
  /** Starts on a free port, taking another when the chosen one is taken first (5 tries). */
  startOnFreePort(): Promise<void>;
  /** Starts again on the same port. */
  start(): Promise<void>;
  /** SIGCONT, then the stop signal to the main process; SIGKILL to all after `timeoutMs`. */
  stop(timeoutMs?: number): Promise<void>;
  /** SIGKILL to every process of the server at once. */
  kill(timeoutMs?: number): Promise<void>;
  /** A signal to the main process only (SIGHUP for a reload). */
  signal(signal: NodeJS.Signals): void;
  /** SIGSTOP to every process: connections stay open and nothing answers. */
  pause(): void;
  resume(): void;
  /** Synchronous SIGKILL to all, for the exit hook. */
  hardStop(): void;
  /** What the server wrote so far (the tail). */
  log(): string;
}

function signalAll(pids: readonly number[], signal: NodeJS.Signals): void {
  for (const pid of pids) {
    try {
      process.kill(pid, signal);
    } catch {
      // Exited meanwhile.
    }
  }
}

export function engineProcess(spec: ProcessSpec): EngineProcess {
  const startTimeoutMs = spec.startTimeoutMs ?? 30_000;
  const members = (pid: number): readonly number[] => spec.members?.(pid) ?? [-pid];
  let port = 0;
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  let logText = '';

  const isRunning = (): boolean => child !== undefined && child.exitCode === null && child.signalCode === null;
  const hardStop = (): void => {
    if (isRunning() && child?.pid !== undefined) signalAll(members(child.pid), 'SIGKILL');
  };

  const launch = async (): Promise<void> => {
    spec.prepare?.(port);
    // detached: its own session, so a Ctrl-C meant for the test runner does not reach it.
    const proc = spawn(spec.file, spec.args(port), {
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(spec.cwd !== undefined ? { cwd: spec.cwd } : {}),
      ...(spec.env !== undefined ? { env: spec.env } : {}),
      ...(spec.user ? { uid: spec.user.uid, gid: spec.user.gid } : {}),
    });
    child = proc;
    logText = '';
    let spawnError: Error | undefined;
    // A spawn that fails (no such file, no permission) emits 'error' and maybe never 'exit'.
    exited = new Promise((resolve) => {
      proc.once('exit', () => resolve());
      proc.once('error', (err) => {
        spawnError = err;
        resolve();
      });
    });
    // A forgotten server must not keep the test process alive; the exit hook kills it.
    proc.unref();
    let sawReady = false;
    const collect = (chunk: Buffer): void => {
      logText = (logText + chunk.toString()).slice(-LOG_LIMIT);
      if (spec.readyLine?.test(logText)) sawReady = true;
    };
    for (const s of [proc.stdout, proc.stderr]) {
      s?.on('data', collect);
      (s as { unref?: () => void } | null)?.unref?.();
    }
    const end = Date.now() + startTimeoutMs;
    for (;;) {
      if (spawnError !== undefined) throw new Error(`${spec.name} could not be started: ${spawnError.message}`);
      if (!isRunning()) {
        await exited;
        throw new Error(`${spec.name} exited at start (${proc.signalCode ?? proc.exitCode}):\n${logText}`);
      }
      if (sawReady) return;
      if (spec.readyProbe !== undefined) {
        try {
          if (await spec.readyProbe(port)) return;
        } catch {
          // Not listening yet.
        }
      }
      if (Date.now() > end) {
        hardStop();
        await exited;
        throw new Error(`${spec.name} did not start in ${startTimeoutMs} ms:\n${logText}`);
      }
      await sleep(20);
    }
  };

  const signalAndWait = async (pids: readonly number[], signal: NodeJS.Signals, timeoutMs: number): Promise<void> => {
    if (!isRunning() || child?.pid === undefined) return;
    const pid = child.pid;
    signalAll(pids, signal);
    // A referenced timer: the child is unref'd, and the wait must keep the process alive.
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([exited.then(() => false), new Promise<boolean>((r) => { timer = setTimeout(() => r(true), timeoutMs); })]);
    clearTimeout(timer);
    if (timedOut) {
      signalAll(members(pid), 'SIGKILL');
      await exited;
    }
  };

  const proc: EngineProcess = {
    get port() {
      return port;
    },
    get running() {
      return isRunning();
    },
    get pid() {
      return isRunning() ? child?.pid : undefined;
    },
    async startOnFreePort() {
      // The port is free when we look; if another process takes it first, take another.
      for (let attempt = 1; ; attempt++) {
        port = await freePort();
        try {
          await launch();
          return;
        } catch (err) {
          if (attempt >= 5 || !spec.portTaken.test((err as Error).message)) throw err;
        }
      }
    },
    async start() {
      if (!isRunning()) await launch();
    },
    async stop(timeoutMs = 15_000) {
      // SIGCONT first: a paused server cannot act on its stop signal.
      proc.resume();
      if (child?.pid !== undefined) await signalAndWait([child.pid], spec.stopSignal ?? 'SIGTERM', timeoutMs);
    },
    async kill(timeoutMs = 15_000) {
      if (child?.pid !== undefined && isRunning()) await signalAndWait(members(child.pid), 'SIGKILL', timeoutMs);
    },
    signal(signal) {
      if (isRunning() && child?.pid !== undefined) signalAll([child.pid], signal);
    },
    pause() {
      if (isRunning() && child?.pid !== undefined) signalAll(members(child.pid), 'SIGSTOP');
    },
    resume() {
      if (isRunning() && child?.pid !== undefined) signalAll(members(child.pid), 'SIGCONT');
    },
    hardStop,
    log: () => logText,
  };
  return proc;
}

/** What startTracked() leaves to its caller. */
export interface Tracked {
  /** Hands the clean-up back to the caller (after its own clean stop). */
  release(): void;
  /** SIGKILL to every process of the server, the extra clean-up, and the folder removed. */
  hardStop(): void;
}

/**
 * Starts `proc` on a free port with its clean-up tracked from the first moment: until
 * `release()`, the exit hook of engines.ts hard-stops the server and removes `dir` (should the
 * test file end without closing it). A start that fails (`before`, the start itself) is
 * cleaned up at once and its error thrown. `before`: what must be done before the first
 * start (a data folder copied); `cleanUp`: what a hard stop does besides the kill and the
 * removal of `dir`.
 */
export async function startTracked(proc: EngineProcess, dir: string, opts: { before?: () => Promise<void>; cleanUp?: () => void } = {}): Promise<Tracked> {
  const hardStop = (): void => {
    proc.hardStop();
    opts.cleanUp?.();
    removeDir(dir);
  };
  const release = track({ hardStop });
  try {
    await opts.before?.();
    await proc.startOnFreePort();
  } catch (err) {
    release();
    hardStop();
    throw err;
  }
  return { release, hardStop };
}
