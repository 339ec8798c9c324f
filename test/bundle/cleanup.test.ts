// npm test leaves nothing behind: every directory tempDir() makes (also the default working
// directory of startBundle and runBundle) is gone when a test file's process exits, and
// nothing on stderr reads like a failure.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// A test file in miniature: it makes temp dirs, starts and stops the bundle, and exits.
const SCRIPT = `
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runBundle, startBundle, tempDir, writeConfig } from ${JSON.stringify(new URL('../support/bundle.js', import.meta.url).href)};
const dir = tempDir();
writeFileSync(join(dir, 'leftover.txt'), 'x');
const srv = await startBundle(['--config', writeConfig(dir), '--data', join(dir, 'data', 'pets.json')]);
await srv.stop();
await runBundle(['--version']);
`;

test('the temp directories of a test file are removed when it exits', async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'petstore-cleanup-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const child = spawn(process.execPath, ['--input-type=module', '-e', SCRIPT], {
    env: { ...process.env, TMPDIR: root },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  assert.equal(code, 0, stderr);
  assert.deepEqual(readdirSync(root), [], 'nothing is left in the temp directory');
  assert.doesNotMatch(stderr, /warning|error|cannot/i);
});
