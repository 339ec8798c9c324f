// Where a server's CPU time goes on the hot path: petstore beside the bare node:http ceiling.
//
// Builds the service's bundle with a source map (into results/profile/, dist/ is left alone),
// runs it and the ceiling peer one after the other under `node --cpu-prof` on CPU 0 with wrk on
// CPU 1, and prints each profile's self time grouped by category, per request (µs) and as a
// share of the CPU time, so the two servers can be compared line by line:
//
//   ours: src/<file>       petstore's own code, by source file (through the source map)
//   node http              node's http layer in JavaScript (_http_server, _http_outgoing,
//                          _http_common, _http_incoming: header processing, the parser's callbacks)
//   net, streams, writev   node:net, streams, stream_base_commons and the native socket writes
//   http parser (native)   llhttp's execute, and the other native parts of the parser
//   events, timers, ticks  EventEmitter, process.nextTick, timers, promise jobs
//   other node             the rest of node's own JavaScript (buffer, util, ...)
//   GC                     (garbage collector)
//   VM / native other      (program): V8 and libuv outside any JavaScript frame
//   idle                   (idle): the server waited for the network
//
//   cd test/bench && node profile.mjs                       # list and get, 5 s each after 2 s warm-up
//   PROFILE_SCENARIOS=list PROFILE_SECONDS=8 PROFILE_SERVERS=petstore node profile.mjs
//   PROFILE_SERVERS=petstore,shared node profile.mjs          # shared: PostgreSQL store, Redis limits
//   PROFILE_SERVERS=petstore,petstore+all,ceiling node profile.mjs   # +all: access log, metrics, journal on
//
// Settings: PROFILE_SCENARIOS (list,get), PROFILE_SERVERS (petstore,ceiling), PROFILE_SECONDS
// (5: the profile covers this measured load only, through profile-hook.mjs), PROFILE_WARMUP (2),
// PROFILE_TOP (12: the top functions by self time listed per profile), BENCH_CONNECTIONS (64),
// BENCH_NO_PIN=1 (no taskset). The profiles are kept in results/profile/*.cpuprofile (open them
// in Chrome DevTools); the tables go to results/profile.md too.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { createRequire } from 'node:module';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { BENCH_DIR, CONFIG, ROOT, auth, http, jsonHeaders, pinPrefix, sharedBackendArgs, stopSharedBackends } from './lib.mjs';
import { seedPet } from './peers/common.mjs';
import { phaseSummary, phaseTable, phaseTimes, sampleWeights } from './profile-phases.mjs';

const env = process.env;
const SECONDS = Math.max(1, Number(env.PROFILE_SECONDS ?? 5));
const WARMUP = Math.max(0, Number(env.PROFILE_WARMUP ?? 2));
const CONNECTIONS = Number(env.BENCH_CONNECTIONS ?? 64);
const TOP = Number(env.PROFILE_TOP ?? 12);
const RUNS = Math.max(1, Number(env.PROFILE_RUNS ?? 1));
const list = (value, all) => (value ? value.split(',').map((s) => s.trim()).filter(Boolean) : all);
const SCENARIOS = list(env.PROFILE_SCENARIOS, ['list', 'get']);
const SERVERS = list(env.PROFILE_SERVERS, ['petstore', 'ceiling']);
const PATHS = { list: '/pets?limit=20', get: '/pets/100' };
const OUT = join(BENCH_DIR, 'results', 'profile');

// ---------------------------------------------------------------------------------------------
// The bundle, with a source map: built as build.mjs builds dist/petstore.js.

async function buildBundle() {
  const require = createRequire(join(ROOT, 'package.json'));
  const { build } = await import(pathToFileURL(require.resolve('esbuild')).href);
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
  const outfile = join(OUT, 'petstore.js');
  await build({
    entryPoints: [join(ROOT, 'src', 'petstore.ts')],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    sourcemap: 'external',
    legalComments: 'none',
    define: { __PETSTORE_VERSION__: JSON.stringify(pkg.version) },
    external: ['postgres', 'ioredis'],
    logLevel: 'warning',
  });
  return { script: outfile, map: new SourceMap(JSON.parse(readFileSync(`${outfile}.map`, 'utf8'))) };
}

// ---------------------------------------------------------------------------------------------
// Running a server under --cpu-prof, and the load.

/** The store of `name`: memory, or for `shared` PostgreSQL and Redis (started once, unpinned). */
function storeArgs(name) {
  return name === 'shared' ? sharedBackendArgs() : ['--memory'];
}

/**
 * `petstore+all`: the bench config with every feature that adds a step after the answer on:
 * the access log (info, on stdout, which is drained), metrics, and the admin endpoints with
 * their request journal.
 */
function allConfig() {
  const file = join(OUT, 'all.config.json');
  const config = JSON.parse(readFileSync(CONFIG, 'utf8'));
  writeFileSync(file, JSON.stringify({ ...config, metrics: true, admin: { key: 'profile-admin-key-0123456789' } }));
  return file;
}

async function start(name, script, file) {
  const ours = name === 'petstore' || name === 'shared' || name === 'petstore+all';
  const target = ours ? script : join(BENCH_DIR, 'peers', 'ceiling.mjs');
  const extra = ours ? ['--log-level', name === 'petstore+all' ? 'info' : 'warn'] : [];
  const config = name === 'petstore+all' ? allConfig() : CONFIG;
  const argv = [...pinPrefix(0), process.execPath, '--import', pathToFileURL(join(BENCH_DIR, 'profile-hook.mjs')).href, target, '--config', config, ...(await storeArgs(name)), '--port', '0', ...extra];
  const proc = spawn(argv[0], argv.slice(1), { cwd: BENCH_DIR, stdio: ['ignore', 'pipe', 'pipe'], env: { ...env, PROFILE_OUT: file } });
  let err = '';
  proc.stderr.on('data', (chunk) => {
    err += chunk;
    for (const [line, waiter] of waiting) {
      if (err.includes(line)) {
        waiting.delete(line);
        waiter();
      }
    }
  });
  const waiting = new Map();
  const signal = (line) => new Promise((resolve) => {
    waiting.set(line, resolve);
    proc.kill('SIGUSR2');
  });
  return new Promise((resolve, reject) => {
    let out = '';
    proc.once('exit', (code) => reject(new Error(`${name} exited (${code}) before it was ready`)));
    proc.stdout.on('data', (chunk) => {
      out += chunk;
      const m = /http:\/\/[^\s"']+\/v1/.exec(out);
      if (m === null) return;
      proc.stdout.removeAllListeners('data');
      proc.stdout.resume();
      proc.removeAllListeners('exit');
      resolve({ proc, url: m[0], signal });
    });
  });
}

function wrk(url, seconds) {
  const argv = [...pinPrefix(1), 'wrk', '-t1', `-c${CONNECTIONS}`, `-d${seconds}s`, '--timeout', '10s', '-s', 'wrk/get.lua', url];
  return new Promise((resolve, reject) => {
    const proc = spawn(argv[0], argv.slice(1), { cwd: BENCH_DIR, env: { ...env, BENCH_EXPECT: '200' }, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    proc.stdout.on('data', (c) => (out += c));
    proc.once('exit', (code) => {
      const line = out.split('\n').find((l) => l.startsWith('BENCH_JSON '));
      if (code !== 0 || !line) return reject(new Error(`wrk failed (${code}): ${out}`));
      resolve(JSON.parse(line.slice('BENCH_JSON '.length)));
    });
  });
}

/** The process's CPU time so far (user and system, µs), from /proc; undefined elsewhere. */
function cpuUs(pid) {
  const file = `/proc/${pid}/stat`;
  if (!existsSync(file)) return undefined;
  const fields = readFileSync(file, 'utf8').split(') ')[1].split(' ');
  // clock ticks (USER_HZ, 100 on Linux)
  return { user: (Number(fields[11]) * 1e6) / 100, system: (Number(fields[12]) * 1e6) / 100 };
}

async function profileOne(name, scenario, bundle, tag) {
  const kept = join(OUT, `${scenario}-${name}${tag}.cpuprofile`);
  rmSync(kept, { force: true });
  const server = await start(name, bundle?.script, kept);
  if (name === 'petstore' || name === 'petstore+all' || (name === 'shared' && (await http(`${server.url}/pets/200`, { headers: auth() })).status !== 200)) {
    for (let i = 1; i <= 200; i++) {
      const r = await http(`${server.url}/pets`, { method: 'POST', headers: jsonHeaders(), body: JSON.stringify(seedPet(i)) });
      if (r.status !== 201) throw new Error(`seeding: ${r.status}`);
    }
  }
  const url = `${server.url}${PATHS[scenario]}`;
  const check = await http(url, { headers: auth() });
  if (check.status !== 200) throw new Error(`${name} ${scenario}: ${check.status}`);
  if (WARMUP > 0) await wrk(url, WARMUP);
  await server.signal('profile started');
  const cpu0 = cpuUs(server.proc.pid);
  const measured = await wrk(url, SECONDS);
  const cpu1 = cpuUs(server.proc.pid);
  await server.signal('profile written');
  const per = (k) => (cpu1[k] - cpu0[k]) / measured.requests;
  const report = { ...measured, rate: measured.requests / (measured.duration_us / 1e6), cpu: cpu1 === undefined ? undefined : per('user') + per('system'), user: cpu1 && per('user'), system: cpu1 && per('system') };
  const exited = new Promise((resolve) => server.proc.once('exit', resolve));
  server.proc.kill('SIGTERM');
  await exited;
  return { profile: JSON.parse(readFileSync(kept, 'utf8')), report, file: kept };
}

// ---------------------------------------------------------------------------------------------
// Self time by category.

const HTTP_FILES = /^node:_http_(server|outgoing|common|incoming)$/;
const NET_FILES = /^node:(net|stream|internal\/stream_base_commons|internal\/streams\/.*|internal\/net|internal\/dtrace)$/;
const EVENT_FILES = /^node:(events|internal\/process\/task_queues|internal\/timers|timers|internal\/async_hooks|internal\/process\/promises)$/;
// Native functions (no file) that write to the socket, and those of the HTTP parser.
const NET_NATIVE = new Set(['writev', 'writeBuffer', 'writeUtf8String', 'writeLatin1String', 'writeAsciiString', 'shutdown', 'readStart', 'readStop', 'onStreamRead', 'close']);
const PARSER_NATIVE = new Set(['execute', 'consume', 'unconsume', 'finish', 'initialize', 'getCurrentBuffer']);

function category(frame, map, bundleUrl) {
  const { url, functionName: fn } = frame;
  if (fn === '(garbage collector)') return 'GC';
  if (fn === '(idle)') return 'idle';
  if (fn === '(program)' || fn === '(root)') return 'VM / native other';
  if (url === '') {
    if (PARSER_NATIVE.has(fn)) return 'http parser (native)';
    if (NET_NATIVE.has(fn)) return 'net, streams, writev';
    return 'native other';
  }
  if (bundleUrl !== undefined && url === bundleUrl) {
    const entry = map.findEntry(frame.lineNumber, frame.columnNumber);
    const source = entry?.originalSource;
    if (source === undefined) return 'ours: (unmapped)';
    const path = source.replace(/^.*?\/src\//, 'src/');
    return path.startsWith('src/') ? `ours: ${path}` : `bundled: ${source.replace(/^.*node_modules\//, '')}`;
  }
  if (url.includes('/peers/')) return 'ours: ceiling.mjs';
  if (HTTP_FILES.test(url)) return 'node http';
  if (NET_FILES.test(url)) return 'net, streams, writev';
  if (EVENT_FILES.test(url)) return 'events, timers, ticks';
  if (url.startsWith('node:')) return 'other node';
  return `other: ${url}`;
}

function selfTimes(profile, map, bundleUrl) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map();
  const { samples } = profile;
  // A sample's interval to the next one, without the process's waits for a CPU (profile-phases.mjs).
  const weights = sampleWeights(profile);
  for (let i = 0; i < samples.length; i++) selfUs.set(samples[i], (selfUs.get(samples[i]) ?? 0) + weights[i]);
  const cats = new Map();
  const fns = new Map();
  for (const [id, us] of selfUs) {
    const node = byId.get(id);
    const cat = category(node.callFrame, map, bundleUrl);
    cats.set(cat, (cats.get(cat) ?? 0) + us);
    const where = cat.startsWith('ours: src/') ? cat.slice(6) : (node.callFrame.url.replace(/^.*\//, '') || '(native)');
    const key = `${node.callFrame.functionName || '(anonymous)'} ${where}`;
    fns.set(key, (fns.get(key) ?? 0) + us);
  }
  return { cats, fns };
}

// ---------------------------------------------------------------------------------------------

const ORDER = ['node http', 'net, streams, writev', 'http parser (native)', 'events, timers, ticks', 'other node', 'native other', 'GC', 'VM / native other'];

function table(scenario, results) {
  const names = [...results.keys()];
  const perReq = (r, us) => us / r.report.requests;
  const cats = new Set();
  for (const r of results.values()) for (const c of r.self.cats.keys()) cats.add(c);
  const ours = [...cats].filter((c) => c.startsWith('ours') || c.startsWith('bundled')).sort((a, b) => {
    const first = results.values().next().value;
    return (first.self.cats.get(b) ?? 0) - (first.self.cats.get(a) ?? 0);
  });
  const rest = [...ORDER.filter((c) => cats.has(c)), ...[...cats].filter((c) => !ORDER.includes(c) && !ours.includes(c) && c !== 'idle')];
  const lines = [];
  const head = names.map((n) => `${n} µs/req | ${n} % busy`).join(' | ');
  lines.push(`### ${scenario}: GET /v1${PATHS[scenario]}`, '');
  lines.push(names.map((n) => {
    const r = results.get(n);
    return `- ${n}: ${Math.round(r.report.rate).toLocaleString('en-US')} requests/s under the profiler, ${r.report.cpu === undefined ? '?' : `${r.report.cpu.toFixed(1)} µs of CPU per request (${r.report.user.toFixed(1)} user + ${r.report.system.toFixed(1)} system, /proc)`}; profile ${relative(BENCH_DIR, r.file)}`;
  }).join('\n'), '');
  lines.push(`| self time | ${head} |`, `|---|${names.map(() => '---:|---:').join('|')}|`);
  const busy = (r) => [...r.self.cats].reduce((s, [c, us]) => (c === 'idle' ? s : s + us), 0);
  const row = (label, get) => `| ${label} | ${names.map((n) => {
    const r = results.get(n);
    const us = get(r);
    return `${perReq(r, us).toFixed(2)} | ${((100 * us) / busy(r)).toFixed(1)}%`;
  }).join(' | ')} |`;
  const sum = (r, list) => list.reduce((s, c) => s + (r.self.cats.get(c) ?? 0), 0);
  lines.push(row('**ours, all**', (r) => sum(r, ours)));
  for (const c of ours) lines.push(row(`&nbsp;&nbsp;${c.replace(/^ours: /, '')}`, (r) => r.self.cats.get(c) ?? 0));
  for (const c of rest) lines.push(row(c, (r) => r.self.cats.get(c) ?? 0));
  lines.push(row('**busy, all**', busy));
  lines.push(`| idle | ${names.map((n) => {
    const r = results.get(n);
    return `${perReq(r, r.self.cats.get('idle') ?? 0).toFixed(2)} | `;
  }).join(' | ')} |`, '');
  for (const n of names) {
    const r = results.get(n);
    const top = [...r.self.fns].filter(([k]) => !k.startsWith('(idle)')).sort((a, b) => b[1] - a[1]).slice(0, TOP);
    lines.push(`Top ${TOP} functions by self time, ${n} (µs/req): ${top.map(([k, us]) => `${k} ${perReq(r, us).toFixed(2)}`).join('; ')}`, '');
  }
  return lines.join('\n');
}

mkdirSync(OUT, { recursive: true });
const bundle = SERVERS.some((n) => n !== 'ceiling') ? await buildBundle() : undefined;
const bundleUrl = bundle === undefined ? undefined : pathToFileURL(bundle.script).href;
const counts = {};
const out = [`Profiles: ${SECONDS} s after ${WARMUP} s of warm-up, ${CONNECTIONS} connections, node ${process.version}; server on CPU 0, wrk on CPU 1.`, ''];
const summaries = new Map(SCENARIOS.map((s) => [s, new Map(SERVERS.map((n) => [n, []]))]));
for (let r = 1; r <= RUNS; r++) {
  const tag = RUNS > 1 ? `-run${r}` : '';
  if (RUNS > 1) out.push(`## Run ${r} of ${RUNS}`, '');
  for (const scenario of SCENARIOS) {
    const results = new Map();
    for (const name of SERVERS) {
      process.stderr.write(`profiling ${name} on ${scenario}${RUNS > 1 ? `, run ${r}` : ''}...\n`);
      const run = await profileOne(name, scenario, bundle, tag);
      run.self = selfTimes(run.profile, bundle?.map, bundleUrl);
      run.phases = phaseTimes(run.profile, bundle?.map, bundleUrl);
      counts[`${scenario}-${name}${tag}`] = run.report.requests;
      delete run.profile;
      results.set(name, run);
      summaries.get(scenario).get(name).push({ times: run.phases, requests: run.report.requests });
    }
    out.push(table(scenario, results));
    out.push(phaseTable(`${scenario}: GET /v1${PATHS[scenario]}`, new Map([...results].map(([n, x]) => [n, { times: x.phases, requests: x.report.requests }]))), '');
  }
}
if (RUNS > 1) {
  out.push(`## Over the ${RUNS} runs`, '');
  for (const scenario of SCENARIOS) out.push(phaseSummary(`${scenario}: GET /v1${PATHS[scenario]}`, summaries.get(scenario)), '');
}
writeFileSync(join(OUT, 'requests.json'), JSON.stringify(counts));
const text = out.join('\n');
process.stdout.write(`${text}\n`);
writeFileSync(join(BENCH_DIR, 'results', 'profile.md'), `${text}\n`);
await stopSharedBackends();
