// The bundle starts the same in any folder, whatever package.json is nearest to it (none, one
// without "type", "type": "commonjs", "type": "module"): node has nothing to warn about and
// nothing to refuse. And it is still a library: imported by name from an ES module or a
// CommonJS one, installed as a package or as a copy of dist/.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BUNDLE, ROOT, UNTIL_MS, tempDir, writeConfig } from '../support/bundle.js';

/** The folder shapes: what package.json (if any) is nearest to the copied bundle. */
const SHAPES: Record<string, string | undefined> = {
  'no package.json': undefined,
  'a package.json without "type" (npm install in /opt/petstore)': '{"name":"opt","dependencies":{"postgres":"^3.4.0"}}',
  '"type": "commonjs" (npm init -y of npm 11)': '{"name":"app","version":"1.0.0","type":"commonjs"}',
  '"type": "module"': '{"name":"app","version":"1.0.0","type":"module"}',
};

/** Starts `node <file> --port 0` in `cwd`; resolves with its stderr up to the ready line, then stops it. */
function startAndStop(file: string, cwd: string, args: readonly string[] = []): Promise<{ stderr: string; code: number | null }> {
  const proc = spawn(process.execPath, [file, '--port', '0', '--memory', ...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  proc.stdout.setEncoding('utf8').on('data', (d: string) => { out += d; });
  proc.stderr.setEncoding('utf8').on('data', (d: string) => { err += d; });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`no ready line in ${UNTIL_MS} ms; stderr: ${err}`));
    }, UNTIL_MS);
    let ready = false;
    proc.stdout.on('data', () => {
      if (ready || !/^petstore listening on http:\/\/127\.0\.0\.1:\d+\/v1$/m.test(out)) return;
      ready = true;
      proc.kill('SIGTERM');
    });
    proc.on('close', (code) => {
      clearTimeout(timer);
      if (!ready) reject(new Error(`exited with ${code} before the ready line; stderr: ${err}`));
      else resolve({ stderr: err, code });
    });
  });
}

/** stderr without the service's own lines (`petstore: ...`): what node itself said. */
const foreign = (stderr: string): string[] => stderr.split('\n').filter((l) => l !== '' && !l.startsWith('petstore: '));

for (const [shape, packageJson] of Object.entries(SHAPES)) {
  test(`the bundle copied alone under ${shape}: it starts, node says nothing, SIGTERM stops it with 0`, { timeout: 2 * UNTIL_MS }, async () => {
    const root = tempDir();
    if (packageJson !== undefined) writeFileSync(join(root, 'package.json'), packageJson);
    mkdirSync(join(root, 'dist'));
    copyFileSync(BUNDLE, join(root, 'dist', 'petstore.js'));
    writeConfig(root);
    const { stderr, code } = await startAndStop(join(root, 'dist', 'petstore.js'), root);
    assert.deepEqual(foreign(stderr), [], stderr);
    assert.equal(code, 0, stderr);
  });
}

/** Runs `code` with node in `cwd` (an ES module unless `cjs`); its stdout, after checking it ran cleanly. */
function runIn(cwd: string, code: string, cjs = false): string {
  const r = spawnSync(process.execPath, [`--input-type=${cjs ? 'commonjs' : 'module'}`, '-e', code], { cwd, encoding: 'utf8', timeout: UNTIL_MS });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stderr, '');
  return r.stdout.trim();
}

const USE = `const h = await startPetstore({ port: 0, clock: new ManualClock() }); const res = await fetch(h.url.replace('/v1', '/healthz')); await h.close(); console.log(res.status, typeof StartError, typeof ConfigError);`;

test('installed as a package: imported by name, by import() and by require(); importing starts nothing', { timeout: 2 * UNTIL_MS }, () => {
  const app = tempDir();
  writeFileSync(join(app, 'package.json'), '{"name":"app","type":"module"}');
  const installed = join(app, 'node_modules', 'petstore');
  mkdirSync(installed, { recursive: true });
  copyFileSync(join(ROOT, 'package.json'), join(installed, 'package.json'));
  cpSync(join(ROOT, 'dist'), join(installed, 'dist'), { recursive: true });
  assert.equal(runIn(app, `import { startPetstore, ManualClock, StartError, ConfigError } from 'petstore'; ${USE}`), '200 function function');
  assert.equal(runIn(app, `const { startPetstore, ManualClock, StartError, ConfigError } = await import('petstore'); ${USE}`), '200 function function');
  assert.equal(runIn(app, `const m = require('petstore'); console.log(Object.keys(m).sort().join());`, true), 'AdminOffError,ConfigError,ManualClock,StartError,startPetstore');
  assert.equal(runIn(app, `import('petstore').then(() => console.log('imported'));`, true), 'imported');
});

for (const [shape, packageJson] of Object.entries(SHAPES)) {
  test(`a copy of dist/ under ${shape}: imported by name from an ES module`, { timeout: 2 * UNTIL_MS }, () => {
    const app = tempDir();
    if (packageJson !== undefined) writeFileSync(join(app, 'package.json'), packageJson);
    cpSync(join(ROOT, 'dist'), join(app, 'vendor', 'petstore'), { recursive: true });
    assert.equal(runIn(app, `import { startPetstore, ManualClock, StartError, ConfigError } from './vendor/petstore/petstore.js'; ${USE}`), '200 function function');
  });
}
