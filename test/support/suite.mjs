#!/usr/bin/env node
// Runs the compiled tests (build/test/**/*.test.js) with node's own test runner, in two groups:
// most files side by side (`--test-concurrency`), then the few that measure something the
// machine's load would disturb (throughput floods, timing, crash and slow-client tests) one at
// a time, alone. `--unit` runs only the unit tests: files that start neither the built bundle
// nor a PostgreSQL or Redis server (found by what they import, so a new file is classed
// without editing this list).
//
//   node test/support/suite.mjs [--unit] [--list] [--concurrency N] [FILTER...]
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
 * Files that run alone, after the others: each races the service's real timers (a token that
 * refills each second, the headers and keep-alive timeouts), so a neighbour's load would change
 * what it sees. Every other file passed side by side on a loaded machine.
 */
const SERIAL = new Set([
  // 100,000-request floods; the per-address budget refills while a slow flood runs.
  'bundle/abuse.test.js',
  // Real 10 s headers and 5 s keep-alive timeouts against slow sockets, five scenarios at once.
  'bundle/slow-clients.test.js',
  // Exactly 60 requests inside the second before the free plan's next token.
  'bundle/ratelimit.test.js',
  // 200-connection floods with a victim counted in a 3 s window: a neighbour's load starves
  // the flood and the victim alike (0 answers seen side by side, 14/14 alone).
  'bundle/fairness.test.js',
]);

/**
 * The longest files (measured: wall time on two cores), started first so that the short ones
 * fill in around them instead of one long file running alone at the end.
 */
const FIRST = [
  'bundle/install.test.js',
  'store/postgres-keys.test.js',
  'bundle/postgres.test.js',
  'store/postgres.test.js',
  'bundle/keys-lock.test.js',
  'bundle/cli.test.js',
  'bundle/keys.test.js',
  'bundle/postgres-idempotency.test.js',
  'bundle/disk.test.js',
  'support/backends.test.js',
  'server/postgres.test.js',
  'store/contract.test.js',
  'store/idempotency-contract.test.js',
  'store/file/crash.test.js',
  'bundle/config-corpus.test.js',
  'bundle/crash-loop.test.js',
  'bundle/fuzz.test.js',
];

/** What a file that is not a unit test imports. */
const NOT_UNIT = [/\bstartBundle\b/, /\brunBundle\b/, /\bBUNDLE\b/, /\bstartPostgres\b/, /\bstartRedis\b/];

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

/** One `node --test` run; resolves with its exit code. */
function run(group, n) {
  if (group.length === 0) return Promise.resolve(0);
  // Each test (and on Node 22 and later each file) is bounded, so a hang fails instead of
  // stalling CI; the bound is far above the longest file on two busy cores.
  const args = ['--test', `--test-concurrency=${n}`, '--test-timeout=600000', ...group];
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { stdio: 'inherit', cwd: ROOT });
    const forward = (sig) => child.kill(sig);
    for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, forward);
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

if (argv.includes('--list')) {
  for (const f of parallel) process.stdout.write(`parallel ${name(f)}\n`);
  for (const f of serial) process.stdout.write(`serial   ${name(f)}\n`);
  process.exit(0);
}

const started = performance.now();
process.stderr.write(`suite: ${parallel.length} files ${concurrency} at a time, then ${serial.length} one at a time (node ${process.version})\n`);
const a = await run(parallel, concurrency);
const b = await run(serial, 1);
process.stderr.write(`suite: ${((performance.now() - started) / 1000).toFixed(0)} s, ${a === 0 && b === 0 ? 'passed' : 'FAILED'}\n`);
process.exit(a !== 0 ? a : b);
