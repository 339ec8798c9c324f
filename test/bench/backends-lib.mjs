// What the benchmarks of the shared backends (store-modes, pg-keyed, workers-bench) share: the
// config they run with, starting the bundle pinned to CPUs, and one wrk run.
import { spawn, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
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

/** Starts the bundle on the CPUs given (taskset list), resolves with its base URL once ready. */
export function startPinned(cpus, config, args) {
  const proc = spawn('taskset', ['-c', cpus, process.execPath, BUNDLE, '--config', config, '--port', '0', '--log-level', 'warn', ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve) => {
    let out = '';
    proc.stdout.on('data', (d) => {
      out += d;
      const m = /listening on (\S+)/.exec(out);
      if (m) resolve({ url: m[1], proc });
    });
  });
}

/** One wrk run on CPU 1 (64 connections) with a script of wrk/; its BENCH_JSON report. */
export function wrk(script, url, seconds) {
  const res = spawnSync('taskset', ['-c', '1', 'wrk', '-t1', '-c64', `-d${seconds}s`, '-s', script, url], { cwd: new URL('.', import.meta.url).pathname, encoding: 'utf8' });
  const line = res.stdout.split('\n').find((l) => l.startsWith('BENCH_JSON '));
  if (!line) throw new Error(res.stdout + res.stderr);
  return JSON.parse(line.slice(11));
}
