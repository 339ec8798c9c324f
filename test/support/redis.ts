// A real, throwaway Redis for tests: one redis-server on a free loopback port, no persistence,
// no config file, nothing left behind. Stop, kill, pause and start again on the same port.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { binaries, removeDir, track, type AfterHook, type AvailabilityOptions, type EngineServer } from './engines.js';
import { freePort, sleep } from './free-port.js';

export interface RedisOptions extends AvailabilityOptions {
  /** Registers `close()` with `t.after`, so the server goes when the test ends, pass or fail. */
  readonly t?: AfterHook;
  /** Extra `--name value` settings. */
  readonly settings?: Readonly<Record<string, string>>;
  /** How long one start may take before it is an error (default 15 s). */
  readonly startTimeoutMs?: number;
}

/** A Redis server with nothing saved: stop() or kill() loses its data, start() comes back empty. */
export interface RedisServer extends EngineServer {
  /** `redis://127.0.0.1:PORT/0` */
  readonly url: string;
  /** One command over a raw connection (RESP), e.g. `command('DBSIZE')`; resolves with the reply line. */
  command(...args: string[]): Promise<string>;
}

const LOG_LIMIT = 64 * 1024;

/** Sends one command and resolves with the first reply line (`+PONG`, `:3`, `$5`...). */
export function rawCommand(port: number, args: readonly string[], timeoutMs = 1000): Promise<string> {
  return new Promise((resolve, reject) => {
    const sock = connect({ host: '127.0.0.1', port });
    let reply = '';
    const fail = (err: Error): void => {
      sock.destroy();
      reject(err);
    };
    sock.setTimeout(timeoutMs, () => fail(new Error(`no reply from 127.0.0.1:${port} in ${timeoutMs} ms`)));
    sock.once('error', fail);
    sock.once('connect', () => sock.write(`*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`));
    sock.on('data', (d: Buffer) => {
      reply += d.toString();
      const end = reply.indexOf('\r\n');
      if (end >= 0) {
        sock.destroy();
        resolve(reply.slice(0, end));
      }
    });
  });
}

export async function startRedis(opts: RedisOptions = {}): Promise<RedisServer> {
  const found = binaries('redis', opts);
  if (!found.available) throw new Error(`Redis is not available: ${found.missing.join(', ')}`);
  const redisServer = found.bin['redis-server'] as string;
  const startTimeoutMs = opts.startTimeoutMs ?? 15_000;
  const dir = mkdtempSync(join(tmpdir(), 'petstore-redis-'));
  let port = 0;
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  let logText = '';
  let closed = false;

  const isRunning = (): boolean => child !== undefined && child.exitCode === null && child.signalCode === null;
  const hardStopProcess = (): void => {
    if (isRunning() && child?.pid !== undefined) {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
  };
  const release = track({
    hardStop: () => {
      hardStopProcess();
      removeDir(dir);
    },
  });

  const launch = async (): Promise<void> => {
    const args = [
      // Only arguments, no config file: /etc/redis/redis.conf (and its service's port) is not read.
      '--port', String(port),
      '--bind', '127.0.0.1',
      '--protected-mode', 'yes',
      '--unixsocket', '',
      '--save', '',
      '--appendonly', 'no',
      '--dir', dir,
      '--daemonize', 'no',
      '--logfile', '',
      '--maxmemory', '256mb',
      ...Object.entries(opts.settings ?? {}).flatMap(([k, v]) => [`--${k}`, v]),
    ];
    const proc = spawn(redisServer, args, { detached: true, stdio: ['ignore', 'pipe', 'pipe'], cwd: dir });
    child = proc;
    logText = '';
    exited = new Promise((resolve) => proc.once('exit', () => resolve()));
    proc.unref();
    const collect = (chunk: Buffer): void => {
      logText = (logText + chunk.toString()).slice(-LOG_LIMIT);
    };
    proc.stdout?.on('data', collect);
    proc.stderr?.on('data', collect);
    (proc.stdout as { unref?: () => void } | null)?.unref?.();
    (proc.stderr as { unref?: () => void } | null)?.unref?.();
    const end = Date.now() + startTimeoutMs;
    for (;;) {
      if (!isRunning()) throw new Error(`redis-server exited at start (${proc.signalCode ?? proc.exitCode}):\n${logText}`);
      try {
        if ((await rawCommand(port, ['PING'], 500)) === '+PONG') return;
      } catch {
        // Not listening yet.
      }
      if (Date.now() > end) {
        hardStopProcess();
        throw new Error(`redis-server did not answer PING in ${startTimeoutMs} ms:\n${logText}`);
      }
      await sleep(20);
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
        if (attempt >= 5 || !/Address already in use|Could not create server TCP listening socket/.test((err as Error).message)) throw err;
      }
    }
  } catch (err) {
    release();
    hardStopProcess();
    removeDir(dir);
    throw err;
  }

  const signalAndWait = async (signal: NodeJS.Signals, timeoutMs: number): Promise<void> => {
    if (!isRunning() || child?.pid === undefined) return;
    const pid = child.pid;
    try {
      process.kill(signal === 'SIGKILL' ? -pid : pid, signal);
    } catch {
      // Exited meanwhile.
    }
    // A referenced timer: the child is unref'd, and the wait must keep the process alive.
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([exited.then(() => false), new Promise<boolean>((r) => { timer = setTimeout(() => r(true), timeoutMs); })]);
    clearTimeout(timer);
    if (timedOut) {
      process.kill(-pid, 'SIGKILL');
      await exited;
    }
  };

  const server: RedisServer = {
    get url() {
      return `redis://127.0.0.1:${port}/0`;
    },
    get port() {
      return port;
    },
    dir,
    get running() {
      return isRunning();
    },
    async stop() {
      server.resume();
      await signalAndWait('SIGTERM', 10_000);
    },
    async kill() {
      await signalAndWait('SIGKILL', 10_000);
    },
    pause() {
      if (isRunning() && child?.pid !== undefined) process.kill(-child.pid, 'SIGSTOP');
    },
    resume() {
      if (isRunning() && child?.pid !== undefined) process.kill(-child.pid, 'SIGCONT');
    },
    async start() {
      if (closed) throw new Error('this Redis was closed');
      if (isRunning()) return;
      await launch();
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
    command: (...args) => rawCommand(port, args),
    log: () => logText,
  };
  opts.t?.after(() => server.close());
  return server;
}
