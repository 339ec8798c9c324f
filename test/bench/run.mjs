// The benchmark: petstore (dist/petstore.js) against Fastify, Express and bare node:http
// peers that implement the same contract. Servers run on CPU 0, wrk on CPU 1. For every
// scenario each server is started fresh, seeded with 200 pets, checked once (the expected
// status, so that an error is never timed as a success), warmed up, then measured in
// interleaved rounds. Prints one markdown table and saves it to results/latest.md.
//
//   npm run bench                     (in test/bench/)
//   BENCH_SECONDS=5 BENCH_ROUNDS=3 BENCH_SCENARIOS=list,create BENCH_SERVERS=petstore,fastify npm run bench
//
// Environment (all optional):
//   BENCH_SECONDS       seconds per timed round (5)
//   BENCH_ROUNDS        timed rounds per server and scenario (3)
//   BENCH_SLICES        slices per round (1): with N, each server's BENCH_SECONDS of a round are
//                       run as N slices of BENCH_SECONDS/N seconds (whole seconds: wrk takes no
//                       fractions, so 5 s in 2 slices is 2 x 3 s), the servers taking turns slice
//                       by slice, and the round's figure is the sum of its slices (see below)
//   BENCH_WARMUP        seconds of warm-up per server and scenario (2)
//   BENCH_CONNECTIONS   wrk connections for the GET scenarios (64; POST always uses 64)
//   BENCH_SCENARIOS     comma list of: list, get, create, nokey, badlimit, startup (all)
//   BENCH_SERVERS       comma list of: petstore, petstore+log, fastify, fastify+log, express, ceiling, ceiling+store,
//                       fsync-baseline, petstore@before, petstore+log@before (all), and
//                       ceiling+work for list and get when BENCH_CEILING_WORK is set
//   BENCH_BEFORE        path of an older dist/petstore.js: adds the row `petstore@before` to every
//                       petstore scenario (and `petstore+log@before` beside `petstore+log`), for
//                       before/after ratios from one run
//   BENCH_SEED_CEILINGS 0 to spare the ceilings the 200 seeding creates every other server gets (see docs/performance.md)
//   BENCH_CEILING_WORK  rounds of extra work per request of `ceiling+work` (peers/ceiling.mjs --work)
//   BENCH_PETSTORE_LOG  petstore's --log-level for the `petstore` rows (warn: no request log, like the peers)
//   BENCH_STARTUP_RUNS  runs of the startup measurement (20)
//   BENCH_BUILD         0 to skip `node build.mjs --tests` at the repository root first
//   BENCH_NO_PIN        1 to run without taskset
//   BENCH_TMPDIR        where the temporary data files go (the OS temp dir); use a real disk
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { seedPet } from './peers/common.mjs';
import { BEFORE, BENCH_DIR, ROOT, SERVERS, have, http, jsonHeaders, auth, measureStartup, median, pinPrefix, pinSelf, roundRatios, startServer } from './lib.mjs';

const env = process.env;
// wrk takes whole seconds.
const SECONDS = Math.max(1, Math.round(Number(env.BENCH_SECONDS ?? 5)));
const ROUNDS = Math.max(1, Math.round(Number(env.BENCH_ROUNDS ?? 3)));
// A round in slices: the servers of a scenario take turns every SECONDS / SLICES seconds, so a
// spell of the machine shorter than a round falls on all of them alike instead of on one.
const SLICES = Math.max(1, Math.min(SECONDS, Math.round(Number(env.BENCH_SLICES ?? 1))));
const SLICE_SECONDS = Math.max(1, Math.round(SECONDS / SLICES));
const WARMUP = Math.max(0, Math.round(Number(env.BENCH_WARMUP ?? 2)));
const CONNECTIONS = Number(env.BENCH_CONNECTIONS ?? 64);
const STARTUP_RUNS = Number(env.BENCH_STARTUP_RUNS ?? 20);
const SEED = 200;
const wanted = (list, value) => !list || list.split(',').map((s) => s.trim()).includes(value);

/** The ceiling with extra work per request, beside it, only when asked for. */
const WORKED = env.BENCH_CEILING_WORK ? ['ceiling+work'] : [];

const SCENARIOS = [
  {
    id: 'list',
    title: 'GET /v1/pets?limit=20',
    servers: ['petstore', 'petstore+log', 'fastify', 'fastify+log', 'express', 'ceiling', ...WORKED],
    script: 'wrk/get.lua',
    path: '/pets?limit=20',
    request: { headers: auth() },
    expect: 200,
  },
  {
    id: 'get',
    title: 'GET /v1/pets/{id}',
    servers: ['petstore', 'petstore+log', 'fastify', 'fastify+log', 'express', 'ceiling', ...WORKED],
    script: 'wrk/get.lua',
    path: '/pets/100',
    request: { headers: auth() },
    expect: 200,
  },
  {
    id: 'create',
    title: 'POST /v1/pets (durable, 64 conn)',
    servers: ['petstore', 'fastify', 'express', 'fsync-baseline', 'ceiling+store', 'ceiling'],
    script: 'wrk/post.lua',
    path: '/pets',
    request: { method: 'POST', headers: jsonHeaders(), body: '{"name":"bench-pet","categoryId":3,"status":"available"}' },
    expect: 201,
    connections: 64,
    durable: true,
  },
  {
    id: 'nokey',
    title: 'GET /v1/pets without key (401)',
    servers: ['petstore', 'fastify', 'express'],
    script: 'wrk/nokey.lua',
    path: '/pets',
    request: {},
    expect: 401,
  },
  {
    id: 'badlimit',
    title: 'GET /v1/pets?limit=0 (400)',
    servers: ['petstore', 'fastify', 'express'],
    script: 'wrk/get.lua',
    path: '/pets?limit=0',
    request: { headers: auth() },
    expect: 400,
  },
];

const STARTUP_SERVERS = ['petstore', 'fastify', 'express', 'ceiling'];

// With BENCH_BEFORE, every scenario that measures petstore measures the older bundle beside it.
if (BEFORE) {
  for (const scenario of SCENARIOS) {
    scenario.servers.splice(1, 0, 'petstore@before');
    const log = scenario.servers.indexOf('petstore+log');
    if (log !== -1) scenario.servers.splice(log + 1, 0, 'petstore+log@before');
  }
  STARTUP_SERVERS.splice(1, 0, 'petstore@before');
}

// ---------------------------------------------------------------------------------------------

function log(...args) {
  console.error('[bench]', ...args);
}

function percentile(values, p) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

function fmtMs(us) {
  const ms = us / 1000;
  return ms >= 100 ? ms.toFixed(0) : ms >= 10 ? ms.toFixed(1) : ms.toFixed(2);
}

function fmtInt(n) {
  return Math.round(n).toLocaleString('en-US');
}

/** Runs wrk (async, so the servers' pipes keep draining) and returns its BENCH_JSON report. */
function runWrk({ url, script, seconds, connections, expect }) {
  const argv = [
    ...pinPrefix(1),
    'wrk',
    '-t1',
    `-c${connections}`,
    `-d${seconds}s`,
    '--timeout',
    '10s',
    '-s',
    script,
    url,
  ];
  return new Promise((resolve, reject) => {
    const proc = spawn(argv[0], argv.slice(1), {
      cwd: BENCH_DIR,
      env: { ...process.env, BENCH_EXPECT: String(expect) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    proc.stdout.on('data', (c) => (out += c));
    proc.stderr.on('data', (c) => (err += c));
    proc.once('exit', (code) => {
      const line = out.split('\n').find((l) => l.startsWith('BENCH_JSON '));
      if (code !== 0 || !line) return reject(new Error(`wrk failed (code ${code}): ${err || out}`));
      resolve(JSON.parse(line.slice('BENCH_JSON '.length)));
    });
  });
}

async function seed(server) {
  for (let i = 1; i <= SEED; i++) {
    const r = await http(`${server.url}/pets`, { method: 'POST', headers: jsonHeaders(), body: JSON.stringify(seedPet(i)) });
    if (r.status !== 201) throw new Error(`seeding pet ${i}: ${r.status ?? r.error?.message} ${r.text ?? ''}`);
  }
}

async function runScenario(scenario, tmp) {
  const names = scenario.servers.filter((n) => wanted(env.BENCH_SERVERS, n));
  const rows = new Map(); // name -> { rounds: [], failure }
  const live = [];
  for (const name of names) {
    const row = { name, rounds: [] };
    rows.set(name, row);
    try {
      const data = scenario.durable ? join(tmp, `${scenario.id}-${name}.data`) : undefined;
      const server = await startServer(name, { data, cpu: 0 });
      live.push(server);
      row.server = server;
      if (server.notFirst) log(`${scenario.id}/${name}: ready line: ${server.notFirst}`);
      // Every server gets the same 200 creates first, the ceilings too though they keep nothing:
      // node's own code (the parser's callbacks, streams, nextTick) is compiled for the requests
      // it has seen, and a ceiling that saw GETs alone runs it about 2,000 instructions a request
      // cheaper than any server that took a create (docs/performance.md). BENCH_SEED_CEILINGS=0
      // spares the ceilings, as the runs before 2026-11-29 did.
      if (!name.startsWith('ceiling') || env.BENCH_SEED_CEILINGS !== '0') await seed(server);
      const check = await http(`${server.url}${scenario.path}`, scenario.request);
      if (check.status !== scenario.expect) {
        throw new Error(`check failed: expected ${scenario.expect}, got ${check.status ?? check.error?.message} ${(check.text ?? '').slice(0, 200)}`);
      }
    } catch (err) {
      row.failure = err.message.split('\n')[0];
      log(`${scenario.id}/${name}: not measured: ${err.message}`);
    }
  }
  const runnable = [...rows.values()].filter((r) => !r.failure);
  const connections = scenario.connections ?? CONNECTIONS;

  for (const row of WARMUP > 0 ? runnable : []) {
    log(`${scenario.id}/${row.name}: warm-up ${WARMUP}s`);
    try {
      await runWrk({ url: `${row.server.url}${scenario.path}`, script: scenario.script, seconds: WARMUP, connections, expect: scenario.expect });
    } catch (err) {
      row.failure = `warm-up: ${err.message.split('\n')[0]}`;
      log(`${scenario.id}/${row.name}: ${err.message}`);
    }
  }
  for (let round = 0; round < ROUNDS; round++) {
    // Interleave: every server once per round (once per slice of it), and a different one
    // first each round.
    const order = runnable.filter((r) => !r.failure);
    const slices = new Map(order.map((row) => [row, []]));
    for (let slice = 0; slice < SLICES; slice++) {
      for (let k = 0; k < order.length; k++) {
        const row = order[(k + round + slice) % order.length];
        if (row.failure) continue;
        log(`${scenario.id}/${row.name}: round ${round + 1}/${ROUNDS}${SLICES > 1 ? `, slice ${slice + 1}/${SLICES}` : ''}`);
        try {
          const report = await runWrk({
            url: `${row.server.url}${scenario.path}`,
            script: scenario.script,
            seconds: SLICE_SECONDS,
            connections,
            expect: scenario.expect,
          });
          slices.get(row).push(report);
        } catch (err) {
          row.failure = err.message.split('\n')[0];
          log(`${scenario.id}/${row.name}: ${err.message}`);
        }
        if (row.server.proc.exitCode !== null || row.server.proc.signalCode !== null) {
          row.failure = `server died: ${row.server.stderr().trim().split('\n').slice(-3).join(' | ')}`;
        }
      }
    }
    for (const [row, reports] of slices) if (!row.failure && reports.length > 0) row.rounds.push(joinSlices(reports));
  }
  for (const server of live) {
    const { code, signal } = await server.stop();
    const row = rows.get(server.name);
    if (code !== 0) row.exit = `exit ${code ?? signal}`;
  }
  return { scenario, connections, rows: [...rows.values()] };
}

/**
 * One round's report from its slices: counts and time added up, each latency percentile the
 * median of the slices' own (wrk reports percentiles, which do not add up).
 */
function joinSlices(reports) {
  if (reports.length === 1) return reports[0];
  const sum = (field) => reports.reduce((total, r) => total + (r[field] ?? 0), 0);
  return {
    requests: sum('requests'),
    duration_us: sum('duration_us'),
    connect: sum('connect'),
    read: sum('read'),
    write: sum('write'),
    timeout: sum('timeout'),
    non2xx: sum('non2xx'),
    unexpected: reports.every((r) => r.unexpected === null) ? null : sum('unexpected'),
    p50_us: median(reports.map((r) => r.p50_us)),
    p90_us: median(reports.map((r) => r.p90_us)),
    p99_us: median(reports.map((r) => r.p99_us)),
    max_us: Math.max(...reports.map((r) => r.max_us)),
    slices: reports.length,
  };
}

/**
 * The median over rounds of petstore's requests/s over the peer's in the same round. Both ran
 * within seconds of each other, so a slow spell of the machine that spans a round weighs on
 * both sides of its ratio instead of on one server's median.
 */
function pairedRatio(petstore, peer) {
  const ratios = roundRatios(petstore, peer);
  return ratios.length === 0 ? 'n/a' : `${median(ratios).toFixed(2)}x`;
}

function summarize(row) {
  if (row.rounds.length === 0) return undefined;
  const rps = row.rounds.map((r) => r.requests / (r.duration_us / 1e6));
  const bad = row.rounds.reduce((sum, r) => sum + r.unexpected, 0);
  const sockErr = row.rounds.reduce((sum, r) => sum + r.connect + r.read + r.write + r.timeout, 0);
  return {
    rps: median(rps),
    rpsAll: rps,
    spread: (Math.max(...rps) - Math.min(...rps)) / median(rps),
    p50: median(row.rounds.map((r) => r.p50_us)),
    p99: median(row.rounds.map((r) => r.p99_us)),
    requests: row.rounds.reduce((sum, r) => sum + r.requests, 0),
    unexpected: bad,
    socketErrors: sockErr,
  };
}

async function runStartup() {
  const targets = ['node-empty', ...STARTUP_SERVERS.filter((n) => wanted(env.BENCH_SERVERS, n))];
  const results = [];
  for (const target of targets) {
    const row = { name: target === 'node-empty' ? 'node -e ""' : target, target, times: [] };
    try {
      await measureStartup(target); // warm the page cache
      for (let i = 0; i < STARTUP_RUNS; i++) row.times.push(await measureStartup(target));
    } catch (err) {
      row.failure = err.message.split('\n')[0];
      log(`startup/${target}: ${err.message}`);
    }
    results.push(row);
  }
  let hyperfine;
  if (have('hyperfine')) {
    const file = join(BENCH_DIR, 'results', 'startup-hyperfine.json');
    const commands = targets.filter((t) => !results.find((r) => r.target === t).failure).map((t) => `node startup-probe.mjs ${t}`);
    const r = spawnSync(
      'hyperfine',
      ['-N', '--warmup', '2', '--runs', String(STARTUP_RUNS), '--export-json', file, '--style', 'none', ...commands],
      { cwd: BENCH_DIR, stdio: ['ignore', 'ignore', 'inherit'] },
    );
    if (r.status === 0) {
      hyperfine = new Map(
        JSON.parse(readFileSync(file, 'utf8')).results.map((x) => [x.command.replace('node startup-probe.mjs ', ''), x]),
      );
    } else log('hyperfine failed; startup has the in-process numbers only');
  }
  return { results, hyperfine };
}

function gitDescribe() {
  const r = spawnSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' });
  const dirty = spawnSync('git', ['status', '--porcelain', '--', 'src'], { cwd: ROOT, encoding: 'utf8' });
  return `${(r.stdout || '?').trim()}${dirty.stdout?.trim() ? ' (src modified)' : ''}`;
}

function renderTable(measured, startup) {
  const lines = [];
  lines.push('| scenario | server | requests/s | spread | p50 ms | p99 ms | non-expected / errors | petstore / peer | paired |');
  lines.push('|---|---|---:|---:|---:|---:|---:|---:|---:|');
  for (const { scenario, connections, rows } of measured) {
    const petstore = rows.find((r) => r.name === 'petstore');
    const ps = petstore && !petstore.failure ? summarize(petstore) : undefined;
    for (const row of rows) {
      const title = `${scenario.title}${scenario.connections ? '' : ` (${connections} conn)`}, expect ${scenario.expect}`;
      const s = row.failure ? undefined : summarize(row);
      if (!s) {
        lines.push(`| ${title} | ${row.name} | not measured: ${(row.failure ?? 'no rounds').replaceAll('|', '/')} | | | | | | |`);
        continue;
      }
      const ratio = row.name === 'petstore' ? '—' : ps ? `${(ps.rps / s.rps).toFixed(2)}x` : 'n/a';
      const errs = `${s.unexpected} / ${s.socketErrors}${row.exit ? ` (${row.exit})` : ''}`;
      const spread = `±${((s.spread / 2) * 100).toFixed(0)}%`;
      const paired = row.name === 'petstore' ? '—' : ps ? pairedRatio(ps.rpsAll, s.rpsAll) : 'n/a';
      lines.push(`| ${title} | ${row.name} | ${fmtInt(s.rps)} | ${spread} | ${fmtMs(s.p50)} | ${fmtMs(s.p99)} | ${errs} | ${ratio} | ${paired} |`);
    }
  }
  if (startup) {
    const ps = startup.results.find((r) => r.target === 'petstore');
    const psMed = ps && !ps.failure ? median(ps.times) : undefined;
    for (const row of startup.results) {
      const title = `startup: spawn to first 200 (${STARTUP_RUNS} runs)`;
      if (row.failure) {
        lines.push(`| ${title} | ${row.name} | not measured: ${row.failure.replaceAll('|', '/')} | | | | | | |`);
        continue;
      }
      const med = median(row.times);
      const ratio = row.target === 'petstore' ? '—' : psMed ? `${(psMed / med).toFixed(2)}x time` : 'n/a';
      lines.push(`| ${title} | ${row.name} | — | | ${med.toFixed(1)} | ${percentile(row.times, 99).toFixed(1)} | 0 | ${ratio} | |`);
    }
    if (startup.hyperfine) {
      const psH = startup.hyperfine.get('petstore');
      for (const row of startup.results) {
        const h = startup.hyperfine.get(row.target);
        if (!h) continue;
        const ratio = row.target === 'petstore' ? '—' : psH ? `${(psH.median / h.median).toFixed(2)}x time` : 'n/a';
        lines.push(
          `| startup: hyperfine, probe process wall time | ${row.name} | — | | ${(h.median * 1000).toFixed(1)} | ${(h.max * 1000).toFixed(1)} | 0 | ${ratio} | |`,
        );
      }
    }
  }
  return lines.join('\n');
}

// ---------------------------------------------------------------------------------------------

if (!have('wrk')) {
  console.error('wrk is not installed: apt-get install -y wrk (hyperfine is optional, same way)');
  process.exit(2);
}
if (env.BENCH_BUILD !== '0') {
  log('building: node build.mjs --tests');
  const r = spawnSync(process.execPath, ['build.mjs', '--tests'], { cwd: ROOT, stdio: 'inherit' });
  if (r.status !== 0) log('build failed; going on with whatever dist/ and build/ hold');
}
if (!existsSync(SERVERS.petstore.script)) log(`${SERVERS.petstore.script} is missing: petstore rows will say so`);
if (!existsSync(join(ROOT, 'build', 'src', 'store', 'index.js'))) log('build/src/store/index.js is missing: the fastify and express peers cannot start');
if (cpus().length < 2 || !have('taskset')) log('fewer than 2 CPUs or no taskset: server and wrk are not isolated');
else if (!pinSelf(1)) log('could not move the harness to CPU 1: its log draining may share the server\'s CPU');

mkdirSync(join(BENCH_DIR, 'results'), { recursive: true });
const tmp = mkdtempSync(join(env.BENCH_TMPDIR ?? tmpdir(), 'petstore-bench-'));
const started = new Date();
const loadBefore = loadavg()[0];
const measured = [];
let startup;
try {
  for (const scenario of SCENARIOS) {
    if (!wanted(env.BENCH_SCENARIOS, scenario.id)) continue;
    measured.push(await runScenario(scenario, tmp));
  }
  if (wanted(env.BENCH_SCENARIOS, 'startup')) startup = await runStartup();
} finally {
  rmSync(tmp, { recursive: true, force: true });
}

const header = [
  `# petstore benchmark, ${started.toISOString()}`,
  '',
  `commit ${gitDescribe()}; node ${process.version}; ${cpus()[0]?.model ?? 'cpu?'} x${cpus().length}; ` +
    `server on CPU 0, wrk -t1 and this harness (which drains the servers' logs) on CPU 1; ${ROUNDS} rounds x ${SECONDS}s (median)${SLICES > 1 ? ` in ${SLICES} slices of ${SLICE_SECONDS}s, the servers taking turns slice by slice` : ''}, ${WARMUP}s warm-up, ${SEED} pets seeded; ` +
    "peers' store: petstore's build/src/store/index.js; " +
    `petstore --log-level ${env.BENCH_PETSTORE_LOG ?? 'warn'}; ` +
    `load average ${loadBefore.toFixed(2)} at start, ${loadavg()[0].toFixed(2)} at end (above ~0.5, other processes share the CPUs and the numbers are noisy).`,
  '',
  'spread = half the range of requests/s over the rounds, relative to the median. ' +
    'non-expected = responses whose status was not the expected one; errors = socket errors and timeouts. ' +
    'petstore / peer: requests/s ratio (above 1: petstore is faster); for startup, time ratio (below 1: petstore is faster). ' +
    'paired: the median over rounds of that ratio within each round (both servers measured seconds apart).',
  '',
].join('\n');
const table = renderTable(measured, startup);
const text = `${header}\n${table}\n`;
writeFileSync(join(BENCH_DIR, 'results', 'latest.md'), text);
writeFileSync(
  join(BENCH_DIR, 'results', 'latest.json'),
  JSON.stringify(
    {
      started,
      seconds: SECONDS,
      rounds: ROUNDS,
      scenarios: measured.map(({ scenario, connections, rows }) => ({
        id: scenario.id,
        title: scenario.title,
        connections,
        rows: rows.map((r) => ({ name: r.name, failure: r.failure, exit: r.exit, rounds: r.rounds, summary: summarize(r) })),
      })),
      startup: startup && {
        results: startup.results.map(({ name, times, failure }) => ({ name, times, failure })),
        hyperfine: startup.hyperfine && Object.fromEntries(startup.hyperfine),
      },
    },
    null,
    2,
  ),
);
console.log(text);
