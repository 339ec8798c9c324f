// The Python harness example (test/examples/harness.py, standard library only) run with the
// machine's python3 against the built bundle: start, ready line, reset, seed, journal, clock
// past a 429, a truncated create retried with an Idempotency-Key, snapshot and restore.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { BUNDLE, ROOT, tempDir } from '../support/bundle.js';

const EXAMPLE = join(ROOT, 'test', 'examples', 'harness.py');
const python = spawnSync('python3', ['--version'], { encoding: 'utf8' });
const skip = python.status === 0 ? false : 'python3 is not installed here: the Python harness example is not run';

test('the Python harness example runs to its end', { skip }, async () => {
  const proc = spawn('python3', [EXAMPLE, BUNDLE], { cwd: tempDir(), env: { ...process.env, NODE: process.execPath }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  proc.stdout.on('data', (d: Buffer) => { out += d.toString(); });
  proc.stderr.on('data', (d: Buffer) => { err += d.toString(); });
  const timer = setTimeout(() => proc.kill('SIGKILL'), 60_000);
  const code = await new Promise<number | null>((resolve) => proc.on('close', resolve));
  clearTimeout(timer);
  assert.equal(code, 0, `stdout:\n${out}\nstderr:\n${err}`);
  assert.match(out, /^harness example: ok$/m);
  assert.equal(out.split('\n').filter((l) => l.startsWith('ok: ')).length, 11, out);
});
