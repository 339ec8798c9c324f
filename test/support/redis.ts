// A real, throwaway Redis for tests: one redis-server on a free loopback port, no persistence,
// no config file, nothing left behind. Stop, kill, pause and start again on the same port.
import { mkdtempSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { binaries, removeDir, type AfterHook, type AvailabilityOptions, type EngineServer } from './engines.js';
import { engineProcess, startTracked } from './engine-process.js';

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
  const dir = mkdtempSync(join(tmpdir(), 'petstore-redis-'));
  let closed = false;
  const proc = engineProcess({
    name: 'redis-server',
    file: found.bin['redis-server'] as string,
    cwd: dir,
    args: (port) => [
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
    ],
    readyProbe: async (port) => (await rawCommand(port, ['PING'], 500)) === '+PONG',
    portTaken: /Address already in use|Could not create server TCP listening socket/,
    stopSignal: 'SIGTERM',
    startTimeoutMs: opts.startTimeoutMs ?? 15_000,
  });
  const { release } = await startTracked(proc, dir);

  const server: RedisServer = {
    get url() {
      return `redis://127.0.0.1:${proc.port}/0`;
    },
    get port() {
      return proc.port;
    },
    dir,
    get running() {
      return proc.running;
    },
    stop: () => proc.stop(10_000),
    kill: () => proc.kill(10_000),
    pause: () => proc.pause(),
    resume: () => proc.resume(),
    async start() {
      if (closed) throw new Error('this Redis was closed');
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
    command: (...args) => rawCommand(proc.port, args),
    log: () => proc.log(),
  };
  opts.t?.after(() => server.close());
  return server;
}
