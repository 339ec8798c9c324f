// Getting the package as a user does, from a clean clone of the committed branch: `npm install`
// of a git+file:// URL into a new project (npm runs `prepare`, which builds dist/), then
// `import 'petstore'` and the `petstore` bin; and `npm pack` of a fresh clone ships dist/.
// Runs only where git and npm are installed; needs the npm registry (or its cache) for the
// build's devDependencies, as any git install does.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { accessSync, constants, existsSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, tempDir } from '../helpers.js';

const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const LIMIT_MS = 240_000;
const usable = [['git', '--version'], [NPM, '--version']].every(([cmd, arg]) => spawnSync(cmd as string, [arg as string]).status === 0);

function run(cmd: string, args: readonly string[], cwd: string): SpawnSyncReturns<string> {
  const res = spawnSync(cmd, args, {
    cwd,
    encoding: 'utf8',
    timeout: LIMIT_MS,
    // No audit, funding or update checks: the test is about what gets installed.
    env: { ...process.env, npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false' },
  });
  assert.equal(res.status, 0, `${cmd} ${args.join(' ')} in ${cwd} failed (${res.error?.message ?? res.status}):\n${res.stdout}\n${res.stderr}`);
  return res;
}

/** A clean clone of the committed HEAD (what `git clone` of the branch gives a user). */
function cleanClone(dir: string): string {
  const head = run('git', ['-C', ROOT, 'rev-parse', 'HEAD'], ROOT).stdout.trim();
  const clone = join(dir, 'petstore');
  run('git', ['clone', '--quiet', '--no-checkout', ROOT, clone], dir);
  run('git', ['-C', clone, 'checkout', '--quiet', head], dir);
  return clone;
}

test('npm install git+file://... builds the bundle: import and the petstore bin work', { skip: !usable && 'git or npm not installed', timeout: 2 * LIMIT_MS }, (t) => {
  const dir = tempDir();
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const clone = cleanClone(dir);
  assert.ok(!existsSync(join(clone, 'dist')), 'a clone has no dist/: it is built on install');
  const app = join(dir, 'app');
  run('git', ['init', '--quiet', app], dir); // any directory would do; this one is empty
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
  run(NPM, ['install', '--prefer-offline', '--no-audit', '--no-fund', `git+file://${clone}`], app);

  const installed = join(app, 'node_modules', 'petstore');
  for (const f of ['dist/petstore.js', 'dist/petstore.d.ts', 'LICENSE', 'README.md']) assert.ok(existsSync(join(installed, f)), `the package has ${f}`);
  accessSync(join(installed, 'dist', 'petstore.js'), constants.X_OK);
  const imported = run(process.execPath, ['--input-type=module', '-e', "const m = await import('petstore'); console.log(typeof m.startPetstore, typeof m.ManualClock);"], app);
  assert.equal(imported.stdout.trim(), 'function function');
  const help = run(join(app, 'node_modules', '.bin', 'petstore'), ['--help'], app);
  assert.match(help.stdout, /^Usage: petstore \[options\]/, 'the bin names itself as invoked');
});

test('npm pack of a fresh clone ships dist/ and LICENSE', { skip: !usable && 'git or npm not installed', timeout: 2 * LIMIT_MS }, (t) => {
  const dir = tempDir();
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const clone = cleanClone(dir);
  // The repository's own devDependencies, as `npm ci` would install them.
  symlinkSync(join(ROOT, 'node_modules'), join(clone, 'node_modules'), 'dir');
  const packed = run(NPM, ['pack', '--dry-run', '--json'], clone);
  const files = (JSON.parse(packed.stdout.slice(packed.stdout.indexOf('['))) as Array<{ files: Array<{ path: string; mode: number }> }>)[0]?.files ?? [];
  const byPath = new Map(files.map((f) => [f.path, f]));
  for (const f of ['dist/petstore.js', 'dist/petstore.d.ts', 'LICENSE', 'README.md', 'package.json']) assert.ok(byPath.has(f), `the tarball has ${f}: ${[...byPath.keys()].join(', ')}`);
  assert.equal((byPath.get('dist/petstore.js')?.mode ?? 0) & 0o111, 0o111, 'the bundle is executable in the tarball');
});
