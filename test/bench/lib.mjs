// Helpers shared by run.mjs, check-peers.mjs and the other benches: the servers under test,
// starting one and reading its ready line, a small HTTP client that never throws on a status,
// and the median and per-round ratios the reports print.
import { spawn, spawnSync } from 'node:child_process';
import { request } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const BENCH_DIR = dirname(fileURLToPath(import.meta.url));
export const ROOT = join(BENCH_DIR, '..', '..');
export const CONFIG = join(BENCH_DIR, 'bench.config.json');
export const KEY = 'bench-key';

const PETSTORE = join(ROOT, 'dist', 'petstore.js');

// The peers log nothing per request, so petstore runs with its request log off
// (--log-level warn, or BENCH_PETSTORE_LOG); `petstore+log` is petstore as shipped (info:
// one JSON line per request on stdout, which the harness drains), to show what that costs.
export const SERVERS = {
  petstore: { script: PETSTORE, args: ['--log-level', process.env.BENCH_PETSTORE_LOG ?? 'warn'] },
  'petstore+log': { script: PETSTORE, args: ['--log-level', 'info'] },
  fastify: { script: join(BENCH_DIR, 'peers', 'fastify.mjs'), args: [] },
  // Fastify with its own pino request logger on, as shipped by a user (two lines a request).
  'fastify+log': { script: join(BENCH_DIR, 'peers', 'fastify.mjs'), args: ['--log'] },
  express: { script: join(BENCH_DIR, 'peers', 'express.mjs'), args: [] },
  ceiling: { script: join(BENCH_DIR, 'peers', 'ceiling.mjs'), args: [] },
  // The ceiling with BENCH_CEILING_WORK rounds of extra work per request (peers/ceiling.mjs).
  'ceiling+work': { script: join(BENCH_DIR, 'peers', 'ceiling.mjs'), args: ['--work', process.env.BENCH_CEILING_WORK ?? '0'] },
  'ceiling+store': { script: join(BENCH_DIR, 'peers', 'ceiling-store.mjs'), args: [] },
  'fsync-baseline': { script: join(BENCH_DIR, 'peers', 'fsync-baseline.mjs'), args: [] },
};

// BENCH_BEFORE=path/to/an/older/petstore.js adds `petstore@before`, run exactly like `petstore`
// (and `petstore+log@before`, like `petstore+log`),
// so a change is measured before and after in the same run (only ratios from one run mean anything).
export const BEFORE = process.env.BENCH_BEFORE;
if (BEFORE) {
  SERVERS['petstore@before'] = { script: BEFORE, args: SERVERS.petstore.args };
  SERVERS['petstore+log@before'] = { script: BEFORE, args: SERVERS['petstore+log'].args };
}

export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/**
 * Round by round, `xs[i] / ys[i]` (both measured within seconds of each other, so a slow spell
 * of the machine that spans a round weighs on both sides of its ratio); rounds either lacks are
 * skipped. The paired ratio is the median of these.
 */
export function roundRatios(xs, ys) {
  const out = [];
  for (let i = 0; i < Math.min(xs.length, ys.length); i++) if (xs[i] !== undefined && ys[i] !== undefined) out.push(xs[i] / ys[i]);
  return out;
}

export function have(command) {
  return spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0;
}

/** `taskset -c CPU` in front of a command when pinning is possible, else nothing. */
export function pinPrefix(cpu) {
  if (process.env.BENCH_NO_PIN === '1' || !have('taskset')) return [];
  return ['taskset', '-c', String(cpu)];
}

/**
 * Moves this harness process (every thread of it) to `cpu`: the load generator's CPU, so that
 * its own work, above all draining the log lines of the `+log` rows from the servers' stdout
 * pipes, is never done on the server's CPU. A deployment's log reader (journald, a shipper)
 * likewise runs beside the service, not on the core it is measured on.
 */
export function pinSelf(cpu) {
  if (pinPrefix(cpu).length === 0) return false;
  return spawnSync('taskset', ['-a', '-p', '-c', String(cpu), String(process.pid)], { stdio: 'ignore' }).status === 0;
}

/**
 * Starts `name` with the bench config, on a free port, on CPU 0; resolves once it printed its
 * base URL. `data` is a data file path, or undefined for --memory.
 */
export function startServer(name, { data, cpu = 0, config = CONFIG, timeoutMs = 15000 } = {}) {
  const { script, args: extra } = SERVERS[name];
  const args = [script, '--config', config, ...(data ? ['--data', data] : ['--memory']), '--port', '0', ...extra];
  const argv = [...pinPrefix(cpu), process.execPath, ...args];
  const proc = spawn(argv[0], argv.slice(1), { cwd: BENCH_DIR, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  proc.stderr.on('data', (chunk) => {
    stderr = (stderr + chunk).slice(-4000);
  });
  const exited = new Promise((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })));

  return new Promise((resolve, reject) => {
    let out = '';
    let done = false;
    const fail = (why) => {
      if (done) return;
      done = true;
      proc.kill('SIGKILL');
      reject(new Error(`${name}: ${why}${stderr ? `\n  stderr: ${stderr.trim()}` : ''}`));
    };
    const timer = setTimeout(() => fail(`no base URL on stdout within ${timeoutMs} ms`), timeoutMs);
    proc.once('exit', (code, signal) => {
      clearTimeout(timer);
      setImmediate(() => fail(`exited (code ${code}, signal ${signal}) before printing its base URL`));
    });
    proc.stdout.on('data', (chunk) => {
      if (done) return;
      out += chunk;
      // The ready line: the FIRST stdout line has the base URL. Later lines are still
      // searched (so a server that logs first can be measured), but that is reported.
      const lines = out.split('\n');
      lines.pop(); // an unfinished line
      const at = lines.findIndex((line) => /http:\/\/[^\s"']+\/v1/.test(line));
      if (at === -1) {
        if (lines.length >= 20) fail(`no base URL in the first 20 stdout lines; first: ${JSON.stringify(lines[0])}`);
        return;
      }
      const match = /http:\/\/[^\s"']+\/v1/.exec(lines[at]);
      const notFirst = at === 0 ? undefined : `base URL on stdout line ${at + 1}, not the first; first: ${lines[0].slice(0, 200)}`;
      done = true;
      clearTimeout(timer);
      proc.stdout.resume(); // keep draining whatever it logs
      resolve({
        name,
        url: match[0],
        notFirst,
        proc,
        stderr: () => stderr,
        stop: () => stopProcess(proc, exited),
      });
    });
  });
}

/**
 * Stops a server started by a bench: SIGTERM, then SIGKILL if it has not exited within
 * `graceMs`. `exited` is the promise of its exit ({ code, signal }), made when it was spawned.
 */
export async function stopProcess(proc, exited, graceMs = 5000) {
  if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
  const t = setTimeout(() => proc.kill('SIGKILL'), graceMs);
  const result = await exited;
  clearTimeout(t);
  return result;
}

/**
 * One HTTP request; resolves { status, headers, text, json } or { error }. `body` may be a
 * string, a Buffer or { stream: size } to send `size` bytes chunked.
 */
export function http(url, { method = 'GET', headers = {}, body, timeoutMs = 10000 } = {}) {
  return new Promise((resolve) => {
    let answered = false; // a response arrived: an error while still uploading is then moot
    const req = request(url, { method, headers, agent: false }, (res) => {
      answered = true;
      const chunks = [];
      const finish = () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode, headers: res.headers, text, json });
      };
      res.on('data', (c) => chunks.push(c));
      res.on('end', finish);
      res.on('error', finish);
      res.on('aborted', finish);
    });
    req.setTimeout(timeoutMs, () => req.destroy(new Error('timeout')));
    req.on('error', (error) => {
      if (!answered) resolve({ error });
    });
    if (body && typeof body === 'object' && 'stream' in body) {
      // Write in chunks; stop quietly if the server answers and closes first.
      let left = body.stream;
      const chunk = Buffer.alloc(16 * 1024, 'a');
      const pump = () => {
        while (left > 0) {
          left -= chunk.length;
          if (!req.write(chunk)) return req.once('drain', pump);
        }
        req.end();
      };
      req.on('error', () => {});
      pump();
    } else {
      req.end(body);
    }
  });
}

export const auth = (key = KEY) => ({ Authorization: `Bearer ${key}` });
export const jsonHeaders = (key = KEY) => ({ ...auth(key), 'Content-Type': 'application/json' });

/**
 * Milliseconds from spawning `target` to its first 200 on GET /v1/pets?limit=20 with the bench
 * key (a server, on --memory, pinned to CPU 0), or to its exit for `node-empty`
 * (`node -e ""`, the floor). The server is killed afterwards.
 */
export async function measureStartup(target, { cpu = 0 } = {}) {
  if (target === 'node-empty') {
    const argv = [...pinPrefix(cpu), process.execPath, '-e', ''];
    const t0 = performance.now();
    const proc = spawn(argv[0], argv.slice(1), { stdio: 'ignore' });
    const code = await new Promise((resolve) => proc.once('exit', resolve));
    if (code !== 0) throw new Error(`node -e "" exited ${code}`);
    return performance.now() - t0;
  }
  const t0 = performance.now();
  const server = await startServer(target, { cpu });
  try {
    for (;;) {
      const r = await http(`${server.url}/pets?limit=20`, { headers: auth() });
      if (r.status === 200) return performance.now() - t0;
      if (performance.now() - t0 > 10000) throw new Error(`${target}: no 200 within 10 s (last: ${r.status ?? r.error?.message})`);
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
  } finally {
    server.proc.kill('SIGKILL');
    await new Promise((resolve) => (server.proc.exitCode !== null || server.proc.signalCode !== null ? resolve() : server.proc.once('exit', resolve)));
  }
}

// PostgreSQL and Redis for the shared-mode rows of profile.mjs and instructions.mjs: started
// once, on first use, unpinned (test/support's engines, built by `node build.mjs --tests`).
let sharedBackends;

/** The store and limits arguments of a petstore on the shared backends (starting them the first time). */
export async function sharedBackendArgs() {
  sharedBackends ??= (async () => {
    const { startPostgres } = await import('../../build/test/support/postgres.js');
    const { startRedis } = await import('../../build/test/support/redis.js');
    return { pg: await startPostgres(), redis: await startRedis() };
  })();
  const { pg, redis } = await sharedBackends;
  return ['--store', pg.url, '--limits', redis.url];
}

/** Stops the shared backends, if sharedBackendArgs started them. */
export async function stopSharedBackends() {
  if (sharedBackends === undefined) return;
  const { pg, redis } = await sharedBackends;
  await Promise.all([pg.close(), redis.close()]);
}
