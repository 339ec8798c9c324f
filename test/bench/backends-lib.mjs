// What the benchmarks of the shared backends (store-modes, pg-keyed, workers-bench) share: the
// config they run with, starting the bundle pinned to CPUs, and one wrk run.
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const BUNDLE = new URL('../../dist/petstore.js', import.meta.url).pathname;

/** Writes the benchmark's config (one enterprise key, limits that never bind) into `dir`. */
export function writeBenchConfig(dir) {
  const config = join(dir, 'bench.config.json');
  writeFileSync(config, JSON.stringify({
    keys: [{ key: 'bench-key', plan: 'enterprise', name: 'bench', limits: { perMinute: 1e9, perDay: 1e12 } }],
    ban: { after: 1e9, seconds: 1 }, anonymous: { perMinute: 1e9, perDay: 1e12 },
  }));
  return config;
}

/** Starts the bundle (or a peer's `script`) on the CPUs given (taskset list), resolves with its base URL once ready. */
export function startPinned(cpus, config, args, env = {}, script = BUNDLE) {
  const proc = spawn('taskset', ['-c', cpus, process.execPath, script, '--config', config, '--port', '0', '--log-level', 'warn', ...args], {
    stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ...env },
  });
  return new Promise((resolve) => {
    let out = '';
    proc.stdout.on('data', (d) => {
      out += d;
      const m = /listening on (\S+)/.exec(out) ?? /^(http:\/\/\S+\/v1)$/m.exec(out);
      if (m) resolve({ url: m[1], proc });
    });
  });
}

const WRK_ARGS = (script, url, seconds) => ['-c', '1', 'wrk', '-t1', '-c64', `-d${seconds}s`, '-s', script, url];
const WRK_CWD = new URL('.', import.meta.url).pathname;

function wrkReport(stdout, stderr) {
  const line = stdout.split('\n').find((l) => l.startsWith('BENCH_JSON '));
  if (!line) throw new Error(stdout + stderr);
  return JSON.parse(line.slice(11));
}

/** One wrk run on CPU 1 (64 connections) with a script of wrk/; its BENCH_JSON report. */
export function wrk(script, url, seconds) {
  const res = spawnSync('taskset', WRK_ARGS(script, url, seconds), { cwd: WRK_CWD, encoding: 'utf8' });
  return wrkReport(res.stdout, res.stderr);
}

/** wrk(), calling `during()` halfway through the run (to look at the processes under load). */
export function wrkDuring(script, url, seconds, during) {
  const child = spawn('taskset', WRK_ARGS(script, url, seconds), { cwd: WRK_CWD });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => { out += d; });
  child.stderr.on('data', (d) => { err += d; });
  const timer = setTimeout(during, seconds * 500);
  return new Promise((resolve, reject) => child.on('exit', () => {
    clearTimeout(timer);
    try {
      resolve(wrkReport(out, err));
    } catch (e) {
      reject(e);
    }
  }));
}

// ---------------------------------------------------------------- CPU per request, from /proc

const CLK_TCK = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;

/** Every live pid with its parent, its CPU time (user + system, s) and its command line. */
function processTable() {
  const table = new Map();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // "pid (comm) state ppid ... utime stime": comm may hold spaces and parentheses.
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ');
      // schedstat: ns on a CPU, ns runnable but waiting for one, timeslices.
      const wait = Number(readFileSync(`/proc/${entry}/schedstat`, 'utf8').split(' ')[1]) / 1e9;
      table.set(Number(entry), { ppid: Number(f[1]), cpu: (Number(f[11]) + Number(f[12])) / CLK_TCK, wait, cmdline });
    } catch {
      // gone meanwhile
    }
  }
  return table;
}

/** `roots` and all their descendants, in `table`. */
function descendants(table, roots) {
  const out = new Set(roots.filter((p) => table.has(p)));
  let grew = true;
  while (grew) {
    grew = false;
    for (const [pid, p] of table) if (!out.has(pid) && out.has(p.ppid)) { out.add(pid); grew = true; }
  }
  return out;
}

/** Pids whose command line matches `re`, with their descendants. */
function byCommandLine(table, re) {
  return descendants(table, [...table].filter(([, p]) => re.test(p.cmdline)).map(([pid]) => pid));
}

const escapeRe = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** What finds the processes of the test engines: the postmaster (by its data directory) and redis-server (by its port). */
export const enginesOf = (pg, redis) => ({
  postgres: { cmd: new RegExp(`^\\S*postgres\\b.*${escapeRe(pg.dir)}`) },
  redis: { cmd: new RegExp(`^\\S*redis-server\\b.*:${redis.port}\\b`) },
});

/**
 * CPU seconds each component spends over a run: `components` maps a name to what finds its
 * processes, { pid } (a process and its children: petstore and its workers) or { cmd } (the
 * processes whose command line matches, and their children: every PostgreSQL backend). Processes
 * are looked up at the start and the end, so backends opened during the run count from zero;
 * a process that ended during the run is missed (none do in these runs: pools stay open).
 */
export function cpuMeter(components) {
  const snapshot = () => {
    const table = processTable();
    const out = {};
    for (const [name, how] of Object.entries(components)) {
      const pids = how.pid !== undefined ? descendants(table, [how.pid]) : byCommandLine(table, how.cmd);
      out[name] = new Map([...pids].map((pid) => [pid, table.get(pid)]));
    }
    return out;
  };
  const before = snapshot();
  return {
    /**
     * Per component since the meter started: CPU seconds, seconds its processes were runnable
     * but waiting for a CPU (schedstat: more processes than cores), and its process count.
     */
    stop() {
      const after = snapshot();
      const out = {};
      for (const name of Object.keys(components)) {
        let seconds = 0;
        let waited = 0;
        const perPid = {};
        for (const [pid, p] of after[name]) {
          perPid[pid] = p.cpu - (before[name].get(pid)?.cpu ?? 0);
          seconds += perPid[pid];
          waited += p.wait - (before[name].get(pid)?.wait ?? 0);
        }
        out[name] = { seconds, waited, processes: after[name].size, perPid };
      }
      return out;
    },
  };
}

/**
 * Pins every process of the engines (`enginesOf`: the postmaster and each backend, redis-server)
 * to `cpus` (a taskset list; '0,1' undoes it), threads included; backends forked later inherit
 * the postmaster's affinity. Returns how many processes were moved.
 */
export function pinEngines(engines, cpus) {
  const table = processTable();
  let moved = 0;
  for (const how of Object.values(engines)) {
    for (const pid of byCommandLine(table, how.cmd)) {
      if (spawnSync('taskset', ['-a', '-p', '-c', cpus, String(pid)], { encoding: 'utf8' }).status === 0) moved++;
    }
  }
  return moved;
}

/** Components that can use one core at most (single-threaded): Redis. */
const SINGLE_CORE = new Set(['redis']);

/**
 * The capacity model: from CPU seconds per request of each component, the requests per second
 * each would allow on one core, and PROJECTED throughput at `cores`: all components share the
 * cores (their CPU per request adds up), and a single-threaded one (Redis) can never use more
 * than one. What saturates first is named. Projected, not measured: it assumes throughput is
 * bound by CPU alone (no lock, disk flush or network wait), and that the load generator runs
 * elsewhere.
 */
export function capacity(cpu, requests, cores = [4, 8, 16]) {
  const perRequest = Object.fromEntries(Object.entries(cpu).map(([name, c]) => [name, c.seconds / requests]));
  const total = Object.values(perRequest).reduce((a, b) => a + b, 0);
  const perCore = Object.fromEntries(Object.entries(perRequest).map(([name, s]) => [name, s > 0 ? 1 / s : Infinity]));
  const projected = cores.map((n) => {
    let rps = total > 0 ? n / total : Infinity;
    let bound = `all ${n} cores busy (largest share: ${Object.entries(perRequest).sort((a, b) => b[1] - a[1])[0]?.[0]})`;
    for (const name of Object.keys(perRequest)) {
      if (SINGLE_CORE.has(name) && perCore[name] < rps) {
        rps = perCore[name];
        bound = `${name} (one core)`;
      }
    }
    return { cores: n, rps: Math.round(rps), bound };
  });
  return { perRequest, perCore, projected };
}

/** The capacity model as a Markdown table (one row per operation). */
export function capacityTable(rows, cores = [4, 8, 16]) {
  const names = [...new Set(rows.flatMap((r) => Object.keys(r.model.perRequest)))];
  const lines = [
    `| operation | ${names.map((n) => `${n} CPU ms/req (req/s per core)`).join(' | ')} | ${cores.map((c) => `${c} cores, projected`).join(' | ')} |`,
    `|---|${names.map(() => '---:').join('|')}|${cores.map(() => '---').join('|')}|`,
  ];
  for (const r of rows) {
    const cells = names.map((n) => {
      const s = r.model.perRequest[n] ?? 0;
      return `${(s * 1000).toFixed(3)} (${s > 0 ? Math.round(1 / s) : '-'})`;
    });
    const proj = r.model.projected.map((p) => `${p.rps}/s, bound: ${p.bound}`);
    lines.push(`| ${r.label} | ${cells.join(' | ')} | ${proj.join(' | ')} |`);
  }
  return lines.join('\n');
}
