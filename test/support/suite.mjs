#!/usr/bin/env node
// Runs the compiled tests (build/test/**/*.test.js), each file in a process of its own, N at a
// time, the longest first: files whose duration is known (FIRST below) start at once, so that the
// short ones fill in around them instead of one long file running alone at the end. (Node's own
// `--test` runner sorts the files by name before it starts them, whatever order it is given:
// the long store/ and support/ files started last.) A few files run alone afterwards (SERIAL).
// Each file's output is printed when it ends, then a summary: every group's wall time, the
// longest files, the failures. `--unit` runs only the unit tests: files that start neither the
// built bundle nor a PostgreSQL or Redis server (found by what they import, so a new file is
// classed without editing this list). `--typecheck` runs `tsc --noEmit` as one more job
// beside the files (npm test does).
//
//   node test/support/suite.mjs [--unit] [--list] [--typecheck] [--concurrency N] [FILTER...]
//
// FILTER keeps the files whose path contains one of the strings. PETSTORE_TEST_CONCURRENCY
// sets N too (default: twice the cores, at least 2: most files wait on sockets and child
// processes more than they compute).
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BUILD = join(ROOT, 'build', 'test');

/**
 * Files that run alone, after the others, because a neighbour's load changes what they
 * measure. fairness: a victim's answers within a 3 s window under a 200-connection flood are
 * compared with its answers alone; side by side with other files, the flood, the server and the
 * victim get a share of the two cores that changes from one window to the next (0 answers seen).
 * The other files that once ran alone no longer race real timers or read RSS: ratelimit runs
 * on a stopped clock, abuse, slow-clients and unread-flood (once part of fairness) read the live
 * heap, slow-clients checks that no socket is cut before its timeout rather than that none is
 * cut while a probe runs. rolling-restart: two instances of two workers each, PostgreSQL, Redis,
 * nginx and haproxy, restarted in turn on two cores; beside other files, an instance's start can
 * outlast the proxies' health windows, and the proxies then have no live upstream for a moment.
 * postgres-recovery: times the return within about a second of the engine answering; beside
 * other files, a share of two cores that changes from one moment to the next is what it times.
 */
const SERIAL = new Set(['bundle/fairness.test.js', 'bundle/rolling-restart.test.js', 'bundle/postgres-recovery.test.js']);

/**
 * The longest files first (wall time of each file side by side on two cores, from the runner's
 * own summary), so that the short ones fill in around them.
 */
const FIRST = [
  'bundle/rolling-restart.test.js',
  'bundle/install.test.js',
  'bundle/abuse.test.js',
  'bundle/cli.test.js',
  'bundle/pg-cursors.test.js',
  'bundle/keys.test.js',
  'bundle/keys-lock.test.js',
  'bundle/postgres.test.js',
  'bundle/reset-workers.test.js',
  'bundle/crash-loop.test.js',
  'bundle/redis-limits.test.js',
  'bundle/pipeline-backpressure.test.js',
  'bundle/unread-flood.test.js',
  'store/postgres/store.test.js',
  'bundle/ops.test.js',
  'bundle/workers.test.js',
  'bundle/config-corpus.test.js',
  'bundle/postgres-idempotency.test.js',
  'bundle/stdio.test.js',
  'bundle/admin.test.js',
  'bundle/ratelimit.test.js',
  'bundle/harness-workers.test.js',
  'store/postgres/keys.test.js',
  'bundle/odd-files.test.js',
  'bundle/disk.test.js',
  'bundle/slow-clients.test.js',
  'store/file/crash.test.js',
  'store/contract.test.js',
  'support/backends.test.js',
  'bundle/embed.test.js',
  'bundle/harness.test.js',
  'store/file/lock-processes.test.js',
  'bundle/pipelining.test.js',
  'bundle/fuzz.test.js',
  'store/idempotency-contract.test.js',
];

/** What a file that is not a unit test imports. */
const NOT_UNIT = [
  /\bstartBundle\b/, /\brunBundle\b/, /\bBUNDLE\b/,
  // The real engines' helpers (PostgreSQL, Redis, PgBouncer, nginx, haproxy), by function or file.
  /\bstart(Postgres|Redis|PgBouncer|Nginx|Haproxy)\b/, /\bshareRedis\b/,
  /support\/(postgres|redis|shared-redis|pgbouncer|proxy)\.js/,
];

/** A file still running after this fails (a hang fails instead of stalling CI). */
const FILE_TIMEOUT_MS = 10 * 60_000;

function testFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return testFiles(p);
    return e.name.endsWith('.test.js') ? [p] : [];
  }).sort();
}

const argv = process.argv.slice(2);
const unitOnly = argv.includes('--unit');
const at = argv.indexOf('--concurrency');
const concurrency = Math.max(1, Number(at >= 0 ? argv[at + 1] : process.env.PETSTORE_TEST_CONCURRENCY) || Math.max(2, 2 * availableParallelism()));
const filters = argv.filter((a, i) => !a.startsWith('--') && !(at >= 0 && i === at + 1));

let files;
try {
  files = testFiles(BUILD);
} catch {
  process.stderr.write('suite: no build/test: run `node build.mjs --tests` first (npm test does)\n');
  process.exit(2);
}
if (filters.length > 0) files = files.filter((f) => filters.some((s) => f.includes(s)));
const name = (f) => relative(BUILD, f).split('\\').join('/');
const isUnit = (f) => !name(f).startsWith('bundle/') && !NOT_UNIT.some((re) => re.test(readFileSync(f, 'utf8')));
if (unitOnly) files = files.filter(isUnit);
if (files.length === 0) {
  process.stderr.write(`suite: no test file matches ${filters.join(' ')}\n`);
  process.exit(2);
}
const serial = files.filter((f) => SERIAL.has(name(f)));
const rank = (f) => (FIRST.includes(name(f)) ? FIRST.indexOf(name(f)) : FIRST.length);
const parallel = files.filter((f) => !SERIAL.has(name(f))).sort((x, y) => rank(x) - rank(y));

if (argv.includes('--list')) {
  for (const f of parallel) process.stdout.write(`parallel ${name(f)}\n`);
  for (const f of serial) process.stdout.write(`serial   ${name(f)}\n`);
  process.exit(0);
}

/** Children still running, stopped with the runner. */
const children = new Set();
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    for (const c of children) c.kill(sig);
    process.exit(130);
  });
}

/**
 * Runs one job (a test file, or the type check) to its end, its output kept and printed
 * at once when it ends so that files running side by side do not interleave.
 */
function runJob(label, command, args) {
  const started = performance.now();
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(child);
    const chunks = [];
    child.stdout.on('data', (d) => chunks.push(d));
    child.stderr.on('data', (d) => chunks.push(d));
    const timer = setTimeout(() => {
      chunks.push(Buffer.from(`\nsuite: ${label} still running after ${FILE_TIMEOUT_MS / 1000} s: killed\n`));
      child.kill('SIGKILL');
    }, FILE_TIMEOUT_MS);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      children.delete(child);
      const seconds = (performance.now() - started) / 1000;
      const ok = code === 0;
      process.stdout.write(`\n# ${ok ? 'ok' : 'FAILED'} ${label} (${seconds.toFixed(1)} s${ok ? '' : `, exit ${code ?? signal}`})\n`);
      const output = Buffer.concat(chunks);
      process.stdout.write(output);
      resolve({ label, ok, seconds, output: ok ? undefined : output.toString() });
    });
  });
}

const testJob = (f) => () => runJob(name(f), process.execPath, ['--test-reporter=spec', f]);
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
const typecheck = () => runJob('tsc -p . --noEmit', process.execPath, [TSC, '-p', '.', '--noEmit']);

/** Runs the jobs, `n` at a time, in order; resolves with their results and the group's wall time. */
async function pool(jobs, n) {
  const started = performance.now();
  const results = [];
  let next = 0;
  const worker = async () => {
    while (next < jobs.length) results.push(await jobs[next++]());
  };
  await Promise.all(Array.from({ length: Math.min(n, jobs.length) }, worker));
  return { results, seconds: (performance.now() - started) / 1000 };
}

const started = performance.now();
process.stderr.write(`suite: ${[parallel.length > 0 ? `${parallel.length} files ${concurrency} at a time` : '', serial.length > 0 ? `${serial.length} alone${parallel.length > 0 ? ' after them' : ''}` : ''].filter(Boolean).join(', ')} (node ${process.version})\n`);
const groups = [];
// The type check goes first: it is one of the longest jobs.
const first = [...(argv.includes('--typecheck') ? [typecheck] : []), ...parallel.map(testJob)];
if (first.length > 0) groups.push(['side by side', await pool(first, concurrency)]);
if (serial.length > 0) groups.push(['alone', await pool(serial.map(testJob), 1)]);

const all = groups.flatMap(([, g]) => g.results);
const failed = all.filter((r) => !r.ok);
const out = (line) => process.stderr.write(`suite: ${line}\n`);
out('');
for (const [label, g] of groups) out(`${label}: ${g.results.length} jobs in ${g.seconds.toFixed(0)} s`);
const longest = [...all].sort((a, b) => b.seconds - a.seconds);
out(`longest: ${longest.slice(0, argv.includes('--times') ? all.length : 12).map((r) => `${r.label} ${r.seconds.toFixed(1)} s`).join(', ')}`);
// A failed job's reasons again at the very end, where a CI log cut to its tail still shows them:
// node's spec reporter closes with a "failing tests:" section (stack frames left out); else the
// job's last lines.
for (const r of failed) {
  const lines = r.output.split('\n');
  const from = lines.findIndex((l) => /^\u2716 failing tests:/.test(l));
  const tail = (from >= 0 ? lines.slice(from) : lines.slice(-40)).filter((l) => !/^\s+at /.test(l)).slice(0, 80);
  out(`${r.label} failed:`);
  for (const l of tail) out(`  ${l}`);
}
for (const r of failed) out(`FAILED ${r.label}`);
out(`${((performance.now() - started) / 1000).toFixed(0)} s, ${all.length - failed.length}/${all.length} jobs passed${failed.length > 0 ? ', FAILED' : ''}`);
process.exit(failed.length > 0 ? 1 : 0);
