// Instructions per request: a measure that does not depend on what else runs on the machine.
//
// Requests per second on a shared 2-core machine move by ±30% from one round to the next;
// the number of instructions a server executes per answer hardly moves. This runs each server
// under valgrind's callgrind with instrumentation off, seeds it, warms it up (so V8 has
// optimized the hot path), then counts the instructions (user space: our JavaScript, node's,
// V8's, the garbage collector; not the kernel) of exactly N requests, sent by a keep-alive
// client with C connections. C=1 puts one request in each turn of the event loop, as a fast
// server on a quiet machine mostly sees; C=16 amortizes what each turn costs.
//
//   cd test/bench && node instructions.mjs                  # list and get; petstore, ceiling
//   BENCH_BEFORE=/tmp/base/dist/petstore.js INSTR_SERVERS=petstore,petstore@before,ceiling node instructions.mjs
//
// Settings: INSTR_SCENARIOS (list,get; or create), INSTR_SERVERS (petstore,ceiling; petstore@before with
// BENCH_BEFORE), INSTR_REQUESTS (2000), INSTR_WARMUP (4000 requests), INSTR_CONNECTIONS (1),
// INSTR_RUNS (2 per server: the spread, from V8's own timing of optimization and GC, is a few
// percent). Needs valgrind (apt-get install -y valgrind). The servers run two at a time.
// INSTR_THREADS=main counts the main thread alone (callgrind --separate-threads=yes): V8's
// background threads compile optimized code and help the garbage collector, and how much of
// that lands in the counted window moves a create's count by 10-20 % from one run to the next;
// the main thread's count hardly moves (its share of the GC is still in it).
// The ceilings get the 200 seeding creates too, as petstore does, so that node's own functions
// are compiled after the same requests in both (see docs/performance.md); INSTR_SEED_CEILING=0
// spares them (the ceilings then count about 2,000 instructions fewer per GET).
// `ceiling+work` is the ceiling with BENCH_CEILING_WORK rounds of extra work per request
// (peers/ceiling.mjs --work): counted here to set the rounds to a server's extra instructions.
// INSTR_CACHE=1 also simulates the caches (callgrind --cache-sim=yes: first-level instruction
// and data caches and the last level, sized like this machine's; slower) and adds a table of
// first-level misses per request: instruction fetches, data reads, data writes. A miss costs
// some ten cycles, an instruction about one: code that executes few instructions but many
// distinct cache lines of machine code per request is slower than its count says.
// `petstore+log` is petstore as shipped, access log on (its stdout drained by this script);
// `petstore+log@before` the same with the BENCH_BEFORE bundle.
// `shared` (and `shared@before`, with BENCH_BEFORE) run the same bundle on a PostgreSQL store
// with Redis limits (both started here, once, and left unpinned) instead of --memory:
//   INSTR_SERVERS=petstore,shared,shared@before INSTR_CONNECTIONS=16 node instructions.mjs
// The `create` scenario (not run by default) counts per POST /pets with the bench key, the
// body wrk/post.lua sends. `petstore` keeps pets in memory (--memory); `file` (and
// `file@before`) runs the bundle on a fresh data file, which is the fair reference for a
// create in the shared mode (a create is answered once it is on disk in both):
//   INSTR_SCENARIOS=create INSTR_SERVERS=file,shared,shared@before INSTR_CONNECTIONS=64 node instructions.mjs
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BEFORE, CONFIG, ROOT, SERVERS as PEERS, have, http, jsonHeaders, KEY, sharedBackendArgs, stopSharedBackends } from './lib.mjs';
import { seedPet } from './peers/common.mjs';

const env = process.env;
const list = (value, all) => (value ? value.split(',').map((s) => s.trim()).filter(Boolean) : all);
const SCENARIOS = list(env.INSTR_SCENARIOS, ['list', 'get']);
const SERVERS = list(env.INSTR_SERVERS, ['petstore', ...(BEFORE ? ['petstore@before'] : []), 'ceiling']);
const N = Number(env.INSTR_REQUESTS ?? 2000);
const WARM = Number(env.INSTR_WARMUP ?? 4000);
const C = Number(env.INSTR_CONNECTIONS ?? 1);
const RUNS = Number(env.INSTR_RUNS ?? 2);
const MAIN_ONLY = env.INSTR_THREADS === 'main';
const CACHE = env.INSTR_CACHE === '1';
const PATHS = { list: '/pets?limit=20', get: '/pets/100', create: '/pets' };
/** What a scenario sends besides a GET, and the status it must get. */
const SENDS = { create: { method: 'POST', body: '{"name":"bench-pet","categoryId":3,"status":"available"}', status: 201 } };
const FILE_DIR = mkdtempSync(join(tmpdir(), 'petstore-instructions-'));
const SCRIPTS = {
  petstore: join(ROOT, 'dist', 'petstore.js'),
  'petstore@before': BEFORE,
  'petstore+log': join(ROOT, 'dist', 'petstore.js'),
  'petstore+log@before': BEFORE,
  shared: join(ROOT, 'dist', 'petstore.js'),
  'shared@before': BEFORE,
  file: join(ROOT, 'dist', 'petstore.js'),
  'file@before': BEFORE,
  ceiling: join(ROOT, 'test', 'bench', 'peers', 'ceiling.mjs'),
  'ceiling+work': join(ROOT, 'test', 'bench', 'peers', 'ceiling.mjs'),
};

if (!have('valgrind') || !have('callgrind_control')) {
  process.stderr.write('instructions.mjs needs valgrind (apt-get install -y valgrind)\n');
  process.exit(1);
}

/**
 * The batch statements that made these pets: each leaves one token row (scope '') in the key
 * table whose pet_id is its first pet's id (two servers may share the database meanwhile).
 */
function batchesOf(url, ids) {
  const [low, high] = [Math.min(...ids), Math.max(...ids)];
  const firsts = execFileSync('psql', ['-X', '-A', '-t', '-d', url, '-c', `SELECT pet_id FROM petstore_idempotency_keys WHERE scope = '' AND pet_id BETWEEN ${low} AND ${high}`], { encoding: 'utf8' });
  const mine = new Set(ids);
  return firsts.split('\n').filter((id) => id !== '' && mine.has(Number(id))).length;
}
/** Creates per batch statement in each counted window, by server (shared servers, create). */
const perBatch = new Map();

async function count(name, scenario) {
  // shared@/path/to/petstore.js: another bundle on the shared backends.
  const script = SCRIPTS[name] ?? (name.startsWith('shared@/') ? name.slice('shared@'.length) : undefined);
  if (script === undefined) throw new Error(`unknown server ${name} (petstore@before needs BENCH_BEFORE)`);
  const out = join(tmpdir(), `petstore-instructions-${process.pid}-${name.replace(/\W/g, '_')}-${scenario}-${Math.random().toString(36).slice(2)}`);
  const peer = name.startsWith('ceiling');
  const backend = name.startsWith('shared') ? await sharedBackendArgs() : undefined;
  const args = ['--tool=callgrind', '--instr-atstart=no', `--callgrind-out-file=${out}`, '--smc-check=all-non-file', ...(CACHE ? ['--cache-sim=yes'] : []), ...(MAIN_ONLY ? ['--separate-threads=yes'] : []),
    process.execPath, script, '--config', CONFIG, ...(backend !== undefined ? backend : name.startsWith('file') ? ['--data', join(FILE_DIR, `${out.slice(out.lastIndexOf('/') + 1)}.json`)] : ['--memory']), '--port', '0', ...(name === 'ceiling+work' ? PEERS['ceiling+work'].args : []), ...(peer ? [] : ['--log-level', name.startsWith('petstore+log') ? 'info' : 'warn'])];
  const proc = spawn('valgrind', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  proc.stderr.on('data', (c) => (stderr = (stderr + c).slice(-4000)));
  const exited = new Promise((resolve) => proc.once('exit', resolve));
  const base = await new Promise((resolve, reject) => {
    let text = '';
    const timer = setTimeout(() => reject(new Error(`${name}: not ready within 180 s\n${stderr}`)), 180_000);
    proc.stdout.on('data', (chunk) => {
      if (text === null) return;
      text += chunk;
      const m = /http:\/\/\S+\/v1/.exec(text);
      if (m === null) return;
      text = null;
      clearTimeout(timer);
      proc.stdout.resume();
      resolve(m[0]);
    });
  });
  try {
    // The shared store is seeded once, by the first server that finds it empty.
    if ((!peer || env.INSTR_SEED_CEILING !== '0') && (!name.startsWith('shared') || (await http(`${base}/pets/200`, { headers: jsonHeaders() })).status !== 200)) {
      for (let i = 1; i <= 200; i++) {
        const r = await http(`${base}/pets`, { method: 'POST', headers: jsonHeaders(), body: JSON.stringify(seedPet(i)) });
        if (r.status !== 201) throw new Error(`${name}: seeding answered ${r.status}`);
      }
    }
    const agent = new Agent({ keepAlive: true, maxSockets: C });
    const url = base + PATHS[scenario];
    const send = SENDS[scenario];
    const headers = send === undefined ? { Authorization: `Bearer ${KEY}` } : { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' };
    /** Ids of the pets created while `made` is set. */
    let made;
    const one = () => new Promise((resolve, reject) => {
      const req = request(url, { agent, method: send?.method ?? 'GET', headers }, (res) => {
        if (made === undefined) res.resume();
        else {
          let body = '';
          res.setEncoding('utf8').on('data', (c) => (body += c)).on('end', () => res.statusCode === 201 && made.push(JSON.parse(body).id));
        }
        res.on('end', () => (res.statusCode === (send?.status ?? 200) ? resolve() : reject(new Error(`${name}: ${res.statusCode}`))));
      });
      req.on('error', reject);
      req.end(send?.body);
    });
    const load = async (n) => {
      let left = n;
      await Promise.all(Array.from({ length: C }, async () => {
        while (left-- > 0) await one();
      }));
    };
    await load(WARM);
    // How many creates a batch carried depends on timing (under valgrind, on what else runs),
    // and the per-batch work is part of a create's count: it is shown beside it.
    if (backend !== undefined && scenario === 'create') made = [];
    execFileSync('callgrind_control', ['--instr=on', String(proc.pid)], { stdio: 'ignore' });
    await load(N);
    execFileSync('callgrind_control', ['--instr=off', String(proc.pid)], { stdio: 'ignore' });
    if (made !== undefined) perBatch.set(name, [...(perBatch.get(name) ?? []), (made.length / batchesOf(backend[1], made)).toFixed(1)]);
    agent.destroy();
  } finally {
    proc.kill('SIGTERM');
    await exited;
  }
  // With separate threads, one file per thread (-01 the main thread) and `out` itself is not written.
  const main = MAIN_ONLY ? `${out}-01` : out;
  // The events are Ir, and with --cache-sim Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw after it.
  const totals = /^totals: ([\d ]+)$/m.exec(readFileSync(main, 'utf8'))?.[1].split(' ').map((v) => Number(v) / N);
  if (env.INSTR_KEEP === undefined) {
    rmSync(out, { force: true });
    if (MAIN_ONLY) for (let t = 1; t <= 64; t++) rmSync(`${out}-${String(t).padStart(2, '0')}`, { force: true });
  } else {
    process.stderr.write(`callgrind output kept: ${main}\n`);
  }
  if (totals === undefined) throw new Error(`${name}: no totals in the callgrind output`);
  return { instructions: totals[0], misses: CACHE ? totals.slice(3, 6) : undefined };
}

/** The middle value of `sorted` (the lower of the two middle ones for an even count). */
const middle = (sorted) => sorted[Math.floor((sorted.length - 1) / 2)];

const lines = [`Instructions per request (callgrind, user space${MAIN_ONLY ? ', main thread only' : ''}): ${N} requests after ${WARM} of warm-up, ${C} connection(s), node ${process.version}; ${RUNS} runs each.`, ''];
lines.push(`| scenario | ${SERVERS.join(' | ')} |`, `|---|${SERVERS.map(() => '---:|').join('')}`);
const missRows = [];
for (const scenario of SCENARIOS) {
  const jobs = [];
  for (const name of SERVERS) for (let r = 0; r < RUNS; r++) jobs.push({ name });
  // Two at a time: callgrind runs on one core, and its count does not depend on the other.
  const results = new Map(SERVERS.map((n) => [n, []]));
  for (let i = 0; i < jobs.length; i += 2) {
    const pair = jobs.slice(i, i + 2);
    process.stderr.write(`${scenario}: ${pair.map((j) => j.name).join(', ')}...\n`);
    const counts = await Promise.all(pair.map((j) => count(j.name, scenario)));
    pair.forEach((j, k) => results.get(j.name).push(counts[k]));
  }
  // The misses of the run with the median instruction count (runs of one server, side by side).
  const misses = (values) => middle([...values].sort((a, b) => a.instructions - b.instructions)).misses.map((v) => Math.round(v).toLocaleString('en-US')).join(' / ');
  if (CACHE) missRows.push(`| ${scenario} | ${SERVERS.map((n) => misses(results.get(n))).join(' | ')} |`);
  const cell = (values) => {
    const sorted = [...values].sort((a, b) => a - b);
    return `${Math.round(middle(sorted)).toLocaleString('en-US')} (${sorted.map((v) => Math.round(v / 100) / 10).join(' / ')}k)`;
  };
  lines.push(`| ${scenario} | ${SERVERS.map((n) => cell(results.get(n).map((r) => r.instructions))).join(' | ')} |`);
}
if (CACHE) {
  lines.push('', 'First-level cache misses per request (callgrind --cache-sim=yes; instruction fetch / data read / data write), of the run with the median count:', '');
  lines.push(`| scenario | ${SERVERS.join(' | ')} |`, `|---|${SERVERS.map(() => '---:|').join('')}`, ...missRows);
}
if (perBatch.size > 0) lines.push('', `Creates per batch statement in the counted window (run by run): ${[...perBatch].map(([n, v]) => `${n} ${v.join(' / ')}`).join('; ')}`);
process.stdout.write(`${lines.join('\n')}\n`);
rmSync(FILE_DIR, { recursive: true, force: true });
await stopSharedBackends();
