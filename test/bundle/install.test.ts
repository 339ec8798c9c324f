// Every way the README installs petstore, from a copy of the working tree (the files git would
// commit: tracked and untracked-but-not-ignored, as they are on disk now), so the test sees
// what is about to be committed rather than the last commit:
//   - `npm ci && npm start` in the copy: the two commands; SIGTERM to npm stops the service;
//   - `npm install /path/to/petstore` of a copy without node_modules fails saying what to run,
//     and of a copy where `npm ci` ran it works;
//   - `npm install git+file://...` builds dist/ on install;
//   - `npm pack` in the copy, then `npm install ./petstore-VERSION.tgz`.
// Each installed package is used as a user would: `import 'petstore'` and the `petstore` bin.
// Needs git and npm, and the npm registry (or its cache) for the build's devDependencies.
import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { accessSync, chmodSync, constants, copyFileSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ROOT, tempDir, until } from '../support/bundle.js';
import { accepts } from '../support/free-port.js';

const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const LIMIT_MS = 300_000;
const usable = [['git', '--version'], [NPM, '--version']].every(([cmd, arg]) => spawnSync(cmd as string, [arg as string]).status === 0);
// The working tree is what git would commit: without a git checkout there is none to copy.
const checkout = usable && spawnSync('git', ['-C', ROOT, 'rev-parse', '--is-inside-work-tree']).status === 0;
const skip = (!usable && 'git or npm not installed') || (!checkout && 'not a git checkout');

/**
 * The environment of a user's shell: none of the npm_* variables of the `npm test` that runs
 * us (they would make the inner npm think it runs a script of ours), no audit, funding or
 * update checks, and the cache preferred over the network.
 */
function userEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!/^npm_/i.test(k) && k !== 'INIT_CWD') env[k] = v;
  return { ...env, npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false', npm_config_prefer_offline: 'true' };
}

function run(cmd: string, args: readonly string[], cwd: string, expectStatus: number | 'any' = 0): SpawnSyncReturns<string> {
  const res = spawnSync(cmd, args, { cwd, encoding: 'utf8', timeout: LIMIT_MS, env: userEnv() });
  if (expectStatus !== 'any') {
    assert.equal(res.status, expectStatus, `${cmd} ${args.join(' ')} in ${cwd} (${res.error?.message ?? res.status}):\n${res.stdout}\n${res.stderr}`);
  }
  return res;
}

/** The working tree as git sees it, copied into `dir`, and committed there (for git+file://). */
function copyWorkingTree(dir: string): string {
  const listed = run('git', ['-C', ROOT, 'ls-files', '-z', '--cached', '--others', '--exclude-standard'], ROOT).stdout;
  let copied = 0;
  for (const rel of listed.split('\0')) {
    if (rel === '') continue;
    const from = join(ROOT, rel);
    // A tracked file deleted in the working tree is not part of it; node_modules is a link here.
    if (!existsSync(from) || !lstatSync(from).isFile()) continue;
    mkdirSync(dirname(join(dir, rel)), { recursive: true });
    copyFileSync(from, join(dir, rel));
    chmodSync(join(dir, rel), statSync(from).mode & 0o777);
    copied++;
  }
  assert.ok(copied > 50, `copied ${copied} files`);
  run('git', ['init', '--quiet', dir], dir);
  run('git', ['-C', dir, 'add', '-A'], dir);
  run('git', ['-C', dir, '-c', 'user.name=test', '-c', 'user.email=test@example.invalid', 'commit', '--quiet', '--no-gpg-sign', '-m', 'working tree'], dir);
  return dir;
}

/** A new empty project, as `npm init` would make. */
function newApp(dir: string): string {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', private: true, type: 'module' }));
  return dir;
}

/** The installed package works: it has dist/, `import 'petstore'` works, so does the bin. */
function assertUsable(app: string): void {
  const installed = join(app, 'node_modules', 'petstore');
  for (const f of ['dist/petstore.js', 'dist/petstore.d.ts', 'LICENSE', 'README.md']) assert.ok(existsSync(join(installed, f)), `the package has ${f}`);
  accessSync(join(installed, 'dist', 'petstore.js'), constants.X_OK);
  const imported = run(process.execPath, ['--input-type=module', '-e', "const m = await import('petstore'); console.log(typeof m.startPetstore, typeof m.ManualClock);"], app);
  assert.equal(imported.stdout.trim(), 'function function');
  const help = run(join(app, 'node_modules', '.bin', 'petstore'), ['--help'], app);
  assert.match(help.stdout, /^Usage: petstore \[options\]/, 'the bin names itself as invoked');
}

/** What npm printed about install scripts (npm 11 names scripts it has not been told to allow). */
const scriptWarnings = (res: SpawnSyncReturns<string>): string[] => `${res.stdout}\n${res.stderr}`.split('\n').filter((l) => /install-scripts|allowScripts/.test(l));

describe('installs from the working tree', { skip, timeout: 4 * LIMIT_MS }, () => {
  let work: string;
  /** A copy of the working tree where `npm ci` ran (the README's first command). */
  let built: string;

  before(() => {
    work = tempDir();
    built = copyWorkingTree(join(work, 'petstore'));
    assert.ok(!existsSync(join(built, 'dist')), 'a copy has no dist/: it is built by npm');
  });

  test('npm ci builds dist/ and prints no install-script warning', () => {
    const res = run(NPM, ['ci'], built);
    assert.deepEqual(scriptWarnings(res), [], 'esbuild is allowed by allowScripts in package.json');
    assert.ok(existsSync(join(built, 'dist', 'petstore.js')), 'prepare built the bundle');
  });

  test('npm start serves; SIGTERM to npm stops the service and frees the port; exit 0', async () => {
    const npm = spawn(NPM, ['start', '--', '--port', '0', '--memory'], { cwd: built, env: userEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    npm.stdout.on('data', (d: Buffer) => { out += d.toString(); });
    npm.stderr.on('data', (d: Buffer) => { err += d.toString(); });
    const exited = new Promise<number | null>((resolve) => npm.on('exit', (code) => resolve(code)));
    try {
      await until('the listening line', () => /petstore listening on http:\/\/127\.0\.0\.1:\d+\/v1/.test(out) || npm.exitCode !== null, 120_000);
      const port = Number(/listening on http:\/\/127\.0\.0\.1:(\d+)\//.exec(out)?.[1]);
      assert.ok(port > 0, `${out}\n${err}`);
      const res = await fetch(`http://127.0.0.1:${port}/healthz`);
      assert.equal(res.status, 200);
      const service = childrenOf(npm.pid as number);
      assert.equal(service.length, 1, 'npm runs the service itself, no shell in between');
      npm.kill('SIGTERM');
      assert.equal(await exited, 0, `npm start exit code\n${out}\n${err}`);
      assert.equal(await accepts(port), false, 'the port is free');
      await until('the service process is gone', () => gone(service[0] as number), 10_000);
    } finally {
      npm.kill('SIGKILL');
    }
  });

  test('npm install /path/to/petstore: fails saying what to run before npm ci there, works after', () => {
    const fresh = copyWorkingTree(join(work, 'fresh'));
    const refused = run(NPM, ['install', fresh], newApp(join(work, 'app-path-fresh')), 'any');
    assert.notEqual(refused.status, 0, 'no half-installed package');
    assert.match(refused.stderr, /petstore: cannot build dist\/petstore\.js: the build tools .* are not installed in/);
    assert.match(refused.stderr, /Run `npm ci` in .*fresh/);
    assert.doesNotMatch(refused.stderr, /ERR_MODULE_NOT_FOUND/);

    const app = newApp(join(work, 'app-path'));
    run(NPM, ['install', built], app);
    assertUsable(app);
  });

  test('npm install git+file://... builds dist/ on install', () => {
    const app = newApp(join(work, 'app-git'));
    run(NPM, ['install', `git+file://${built}`], app);
    assertUsable(app);
  });

  test('npm pack ships dist/ and LICENSE; npm install of the tarball works', () => {
    const packed = run(NPM, ['pack', '--json', '--pack-destination', work], built);
    const [info] = JSON.parse(packed.stdout.slice(packed.stdout.indexOf('['))) as Array<{ filename: string; files: Array<{ path: string; mode: number }> }>;
    assert.ok(info);
    const byPath = new Map(info.files.map((f) => [f.path, f]));
    for (const f of ['dist/petstore.js', 'dist/petstore.d.ts', 'LICENSE', 'README.md', 'package.json']) assert.ok(byPath.has(f), `the tarball has ${f}: ${[...byPath.keys()].join(', ')}`);
    assert.equal((byPath.get('dist/petstore.js')?.mode ?? 0) & 0o111, 0o111, 'the bundle is executable in the tarball');
    assert.ok(![...byPath.keys()].some((p) => p.startsWith('src/') || p.startsWith('test/')), 'sources stay out');
    const app = newApp(join(work, 'app-tarball'));
    run(NPM, ['install', join(work, info.filename)], app);
    assertUsable(app);
  });
});

/** The pids whose parent is `pid` (Linux /proc). */
function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) out.push(Number(entry));
    } catch {
      // Exited while we looked.
    }
  }
  return out;
}

/** The process has exited (gone, or a zombie nobody reaped yet). */
function gone(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return true;
  }
}
