// close() releases every resource whatever the others did.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, rmSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { startPetstore } from '../src/server.js';
import { KEYS, call, tempDir, testConfig } from './helpers.js';

test('close saves the limiter state even when the store fails to close', async (t) => {
  const dir = tempDir();
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const dataFile = join(dir, 'pets.json');
  const handle = await startPetstore({ port: 0, config: testConfig(), dataFile });
  for (let i = 0; i < 3; i++) assert.equal((await call(`${handle.url}/pets`, { key: KEYS.free })).status, 200);
  // The journal loses its name, so close must rewrite the data file; a directory where its
  // temporary file goes makes that fail.
  unlinkSync(`${dataFile}.journal`);
  mkdirSync(`${dataFile}.tmp`);
  await assert.rejects(handle.close(), /cannot be written/);
  const limits = `${dataFile}.limits.json`;
  assert.ok(existsSync(limits), 'the limiter state was saved');
  assert.ok(readFileSync(limits, 'utf8').length > 0);
  assert.ok(!existsSync(`${dataFile}.lock`), 'the data file lock is released');
});
