// A pipelining flood with the limits in Redis: does another client still get its answers, and
// how much memory does the server take? The flood is the overload check's keyless client:
// 100 connections, each keeping 1,000 pipelined `GET /v1/pets` without a key in flight (one
// more sent for every answer read; a connection the server closes is opened again, unless
// BENCH_RECONNECT=0). Beside it a victim sends `GET /v1/pets?limit=1` with its
// own key, one request at a time (the next once the last is answered), and its latencies are
// recorded. Printed per run: the victim's answers, median and p99 latency; the server's peak
// RSS (VmHWM from /proc) and what it holds live at the end of the window (heap and external
// memory after forced full collections, test/support/heap-probe.ts, which depends on when V8
// collects no more than the work done does); what the flood got (answers per status, 5xx
// counted apart).
//
// The server runs on CPU 0 (taskset -c 0), the flood (a child process) and this harness with
// the victim on CPU 1; redis-server is not pinned. One Redis for every run, emptied (FLUSHALL)
// before each server starts, so every run starts from the same state.
//
// Run after `node build.mjs --tests` (it uses test/support's Redis from build/):
//   node test/bench/flood-redis.mjs
// Settings (environment variables):
//   BENCH_BEFORE=path/to/an/older/petstore.js  also runs that bundle, alternating with
//                                              dist/petstore.js, one of each per round (the
//                                              order swapped every round): a change measured
//                                              before and after in one run
//   BENCH_ROUNDS=3          rounds
//   BENCH_SECONDS=8         seconds the victim is measured per run (after BENCH_WARMUP)
//   BENCH_WARMUP=2          seconds of flood before the victim starts
//   BENCH_CONNECTIONS=100   flood connections
//   BENCH_DEPTH=1000        pipelined requests in flight per flood connection
//   BENCH_RECONNECT=0       a flood connection the server closes stays closed (default: opened again)
//   BENCH_KEEPALIVE=0       the victim opens a new connection for each request (default: keeps one)
//   BENCH_LIMITS=memory     limits in process instead of Redis (the same flood, for comparison)
//   BENCH_NODE_FLAGS='...'  node flags for the servers (e.g. --cpu-prof --cpu-prof-dir=/tmp/prof)
//   BENCH_LOG=info          the servers' log level (default warn), their stdout kept in
//                           $TMPDIR/flood-redis-PID.log
// Every wait is bounded: a victim request gives up after 10 s, a server that does not start in
// 15 s or stop in 5 s is killed.
import { spawn } from 'node:child_process';
import { createWriteStream, readFileSync, mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { pathToFileURL } from 'node:url';
import { join } from 'node:path';
import { median, pinPrefix, pinSelf, ROOT, stopProcess } from './lib.mjs';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 2);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 100);
const DEPTH = Number(process.env.BENCH_DEPTH ?? 1000);
const RECONNECT = process.env.BENCH_RECONNECT === '0' ? 0 : 1;
const KEEP_ALIVE = process.env.BENCH_KEEPALIVE !== '0';
const IN_REDIS = process.env.BENCH_LIMITS !== 'memory';
const NODE_FLAGS = (process.env.BENCH_NODE_FLAGS ?? '').split(' ').filter(Boolean);
const VICTIM_KEY = 'victim-key-0123';

const BUNDLES = { after: join(ROOT, 'dist', 'petstore.js') };
if (process.env.BENCH_BEFORE) BUNDLES.before = process.env.BENCH_BEFORE;

const dir = mkdtempSync(join(tmpdir(), 'petstore-flood-redis-'));
const configFile = join(dir, 'config.json');
// The defaults of a deployment (keyless budget 30 a minute, the default ban), and the victim's key.
writeFileSync(configFile, JSON.stringify({
  host: '127.0.0.1',
  keys: [{ key: VICTIM_KEY, plan: 'enterprise', name: 'victim', limits: { perMinute: 1e9, perDay: 1e12 } }],
}));

pinSelf(1);
let redis;
if (IN_REDIS) {
  const { startRedis } = await import('../../build/test/support/redis.js');
  redis = await startRedis();
}

// ---------------------------------------------------------------------------------------
// The server.

function startServer(bundle) {
  const args = [bundle, '--config', configFile, '--memory', '--port', '0', '--log-level', process.env.BENCH_LOG ?? 'warn', ...(IN_REDIS ? ['--limits', redis.url] : [])];
  // The heap probe (test/support/heap-probe.ts): on SIGUSR2, the heap left after full collections.
  const probe = ['--import', pathToFileURL(join(ROOT, 'build', 'test', 'support', 'heap-probe.js')).href];
  const argv = [...pinPrefix(0), process.execPath, ...probe, ...NODE_FLAGS, ...args];
  const proc = spawn(argv[0], argv.slice(1), { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  proc.stderr.on('data', (d) => { stderr = (stderr + d).slice(-4000); });
  const exited = new Promise((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })));
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => { proc.kill('SIGKILL'); reject(new Error(`no base URL in 15 s: ${stderr}`)); }, 15_000);
    proc.once('exit', (code) => { clearTimeout(timer); reject(new Error(`exited ${code}: ${stderr}`)); });
    proc.stdout.on('data', (d) => {
      out += d;
      const m = /http:\/\/[^\s"']+\/v1/.exec(out);
      if (m === null) return;
      clearTimeout(timer);
      proc.stdout.removeAllListeners('data');
      if (process.env.BENCH_LOG) proc.stdout.pipe(createWriteStream(join(tmpdir(), `flood-redis-${proc.pid}.log`)));
      else proc.stdout.resume();
      resolve({
        url: m[0], proc, stderr: () => stderr,
        stop: () => stopProcess(proc, exited),
      });
    });
  });
}

/** What the server holds live (MiB, heap and external after forced full collections), or NaN. */
async function liveMiB(srv) {
  const seen = srv.stderr().split('heap-probe ').length;
  srv.proc.kill('SIGUSR2');
  for (let i = 0; i < 200; i++) {
    const parts = srv.stderr().split('heap-probe ');
    if (parts.length > seen) {
      const m = JSON.parse(parts[parts.length - 1].split('\n')[0]);
      return (m.heapUsed + m.external) / 1048576;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return NaN;
}

/** VmHWM (peak RSS) and VmRSS of a process, in MiB. */
function memory(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field) => Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? NaN);
  return { peak: kib('VmHWM') / 1024, now: kib('VmRSS') / 1024 };
}

// ---------------------------------------------------------------------------------------
// The flood: a child process on CPU 1, counting status lines (all the parsing it needs, so
// that the server is what is measured); it sends its counts over IPC when asked.

// The reading is test/support/flood.ts's, which the black-box fairness tests use.
const { ANSWER_READER_SOURCE } = await import('../../build/test/support/flood.js');
const FLOOD_SOURCE = `
${ANSWER_READER_SOURCE}
const net = require('node:net');
const [port, connections, depth, reconnect] = process.argv.slice(1).map(Number);
const request = 'GET /v1/pets HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n';
const counts = { answers: 0, statuses: {}, errors: 0, closed: 0 };
const sockets = new Set();
let stopping = false;
// A connection the server closes is opened again at once: the flood keeps its connections.
const open = () => {
  const s = net.connect(port, '127.0.0.1');
  sockets.add(s);
  s.on('error', () => { counts.errors++; });
  s.on('close', () => {
    sockets.delete(s);
    if (stopping) return;
    counts.closed++;
    if (reconnect) setTimeout(open, 10);
  });
  s.on('connect', () => s.write(request.repeat(depth)));
  readAnswers(s, counts, request);
};
for (let c = 0; c < connections; c++) open();
process.on('message', (m) => {
  if (m === 'stop') {
    stopping = true;
    for (const s of sockets) s.destroy();
  }
  process.send(counts);
  if (m === 'stop') process.disconnect();
});
`;

function startFlood(port) {
  const argv = [...pinPrefix(1), process.execPath, '-e', FLOOD_SOURCE, String(port), String(CONNECTIONS), String(DEPTH), String(RECONNECT)];
  const proc = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const ask = (m) => new Promise((resolve) => {
    const t = setTimeout(() => resolve(undefined), 10_000);
    proc.once('message', (c) => { clearTimeout(t); resolve(c); });
    proc.send(m);
  });
  return {
    counts: () => ask('count'),
    async stop() {
      const c = await ask('stop');
      const t = setTimeout(() => proc.kill('SIGKILL'), 5_000);
      await new Promise((r) => (proc.exitCode !== null ? r() : proc.once('exit', r)));
      clearTimeout(t);
      return c;
    },
  };
}

// ---------------------------------------------------------------------------------------
// The victim: one request at a time with its own key, for `ms`.

async function victim(url, ms) {
  const agent = new Agent({ keepAlive: KEEP_ALIVE, maxSockets: 1 });
  const latencies = [];
  const statuses = {};
  /** [sent, answered (Date.now()), status] per request, written beside the log with BENCH_LOG. */
  const trace = [];
  let sent = 0;
  const end = performance.now() + ms;
  while (performance.now() < end) {
    sent++;
    const started = performance.now();
    const sentAt = Date.now();
    let connectedAt;
    const status = await new Promise((resolve) => {
      const req = request(`${url}/pets?limit=1`, { agent, headers: { authorization: `Bearer ${VICTIM_KEY}` } }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode));
        res.on('close', () => resolve(res.complete ? res.statusCode : 'cut'));
      });
      req.on('error', () => resolve('error'));
      req.on('socket', (sock) => {
        if (sock.connecting) sock.once('connect', () => { connectedAt = Date.now(); });
      });
      req.setTimeout(10_000, () => { req.destroy(); resolve('timeout'); });
      req.end();
    });
    statuses[status] = (statuses[status] ?? 0) + 1;
    trace.push([sentAt, Date.now(), status, connectedAt]);
    if (status === 200) latencies.push(performance.now() - started);
  }
  agent.destroy();
  return { sent, latencies, statuses, trace };
}

const pct = (xs, p) => {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
};

async function run(name) {
  if (redis) await redis.command('FLUSHALL');
  const srv = await startServer(BUNDLES[name]);
  const pid = srv.proc.pid;
  const port = Number(new URL(srv.url).port);
  const flood = startFlood(port);
  try {
    await new Promise((r) => setTimeout(r, WARMUP * 1000));
    const before = await flood.counts();
    const v = await victim(srv.url, SECONDS * 1000);
    const counts = await flood.counts();
    const mem = memory(pid);
    const live = await liveMiB(srv);
    if (process.env.BENCH_LOG) writeFileSync(join(tmpdir(), `flood-redis-${pid}.victim.json`), JSON.stringify(v.trace));
    const fivexx = Object.entries(counts?.statuses ?? {}).filter(([s]) => s.startsWith('5')).reduce((a, [, n]) => a + n, 0);
    return {
      bundle: name,
      'victim answers': v.latencies.length,
      'victim other': JSON.stringify(Object.fromEntries(Object.entries(v.statuses).filter(([s]) => s !== '200'))),
      'p50 ms': +median(v.latencies).toFixed(1),
      'p99 ms': +pct(v.latencies, 99).toFixed(1),
      'max ms': +pct(v.latencies, 100).toFixed(1),
      'peak RSS MiB': +mem.peak.toFixed(0),
      'live MiB': +live.toFixed(1),
      'flood answers/s': Math.round(((counts?.answers ?? 0) - (before?.answers ?? 0)) / SECONDS),
      'flood 5xx': fivexx,
      'flood closed': counts?.closed ?? 0,
      'flood statuses': JSON.stringify(counts?.statuses ?? {}),
    };
  } finally {
    await flood.stop();
    const exit = await srv.stop();
    if (exit.code !== 0) console.error(`${name}: exit ${JSON.stringify(exit)}\n${srv.stderr()}`);
  }
}

const rows = [];
try {
  console.log(`flood: ${CONNECTIONS} connections x ${DEPTH} pipelined keyless GETs, limits ${IN_REDIS ? 'in Redis' : 'in process'}; victim ${SECONDS} s after ${WARMUP} s; ${ROUNDS} rounds`);
  const names = Object.keys(BUNDLES);
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? [...names].reverse() : names;
    for (const name of order) {
      const row = { round: round + 1, ...(await run(name)) };
      rows.push(row);
      console.log(JSON.stringify(row));
    }
  }
  console.table(rows);
} finally {
  await redis?.close();
  rmSync(dir, { recursive: true, force: true });
}
