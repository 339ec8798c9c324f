// The Python client's own tests and examples (clients/python, run by pytest) against the built
// bundle: its pytest fixture starts dist/petstore.js, each test in a namespace of its own, and
// one of them runs the examples in four pytest processes at once against that one service.
// Needs a python3 with pytest (Debian's python3-pytest); without one, the test says so in one
// skip line.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { BUNDLE, ROOT, tempDir } from '../support/bundle.js';

const CLIENT = join(ROOT, 'clients', 'python');

/** The first of $PYTHON, python3, /usr/bin/python3 that can import pytest. */
function findPython(): string | undefined {
  const candidates = [process.env.PYTHON, 'python3', '/usr/bin/python3'].filter((c): c is string => !!c);
  return candidates.find((python) => spawnSync(python, ['-c', 'import pytest'], { stdio: 'ignore' }).status === 0);
}

const python = findPython();
const skip = python ? false : 'no python3 with pytest here (install python3-pytest): the Python client is not tested';

test('the Python client passes its tests and examples under pytest', { skip, timeout: 600_000 }, async () => {
  const args = ['-m', 'pytest', CLIENT, '-q', '-p', 'no:cacheprovider', '-o', 'console_output_style=classic'];
  const proc = spawn(python!, args, {
    cwd: tempDir(),
    env: { ...process.env, PETSTORE_BUNDLE: BUNDLE, NODE: process.execPath, PYTHONDONTWRITEBYTECODE: '1', PETSTORE_URL: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout.on('data', (d: Buffer) => { out += d.toString(); });
  proc.stderr.on('data', (d: Buffer) => { out += d.toString(); });
  // Past the bound, SIGINT: pytest stops the services it started on the way out (SIGKILL would
  // leave them running).
  const stop = setTimeout(() => proc.kill('SIGINT'), 540_000);
  const kill = setTimeout(() => proc.kill('SIGKILL'), 570_000);
  const code = await new Promise<number | null>((resolve) => proc.on('close', resolve));
  clearTimeout(stop);
  clearTimeout(kill);
  assert.equal(code, 0, `${python} ${args.join(' ')} failed:\n${out}`);
  assert.match(out, /\d+ passed/);
  assert.doesNotMatch(out, /\d+ (failed|error)/);
});
