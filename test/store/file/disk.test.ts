// makeDir: the missing directories are made one by one below the nearest that exists.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeDir } from '../../../src/store/file/disk.js';
import { tempDir } from '../../support/bundle.js';

test('makeDir makes every missing directory, and accepts one that exists', async () => {
  const dir = tempDir();
  const deep = join(dir, 'a', 'b', 'c');
  await makeDir(deep);
  assert.ok(statSync(deep).isDirectory());
  await makeDir(deep);
  await makeDir(dir);
});

test('makeDir under a file fails with ENOTDIR, naming the file', async () => {
  const dir = tempDir();
  writeFileSync(join(dir, 'f'), '');
  await assert.rejects(makeDir(join(dir, 'f', 'x', 'y')), (err: NodeJS.ErrnoException) =>
    err.code === 'ENOTDIR' && err.message.includes(join(dir, 'f')));
  assert.ok(!existsSync(join(dir, 'f', 'x')));
});

test('makeDir where the parent takes no new directory fails at once (no retry loop)', { timeout: 10_000, skip: !existsSync('/proc/self') && 'no /proc' }, async () => {
  await assert.rejects(makeDir('/proc/nope/deeper'), (err: NodeJS.ErrnoException) =>
    err.code === 'ENOENT' && err.message.includes('/proc/nope'));
});
