// close() releases every resource whatever the others did.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, rmSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { startPetstore } from '../../src/server/start.js';
import { KEYS, call, post, tempDir, testConfig } from '../support/bundle.js';

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

test('a journal that lost its name is closed when close() rewrites the data file: no descriptor outlives the store', async (t) => {
  const dir = tempDir();
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const dataFile = join(dir, 'pets.json');
  const openJournals = (): number =>
    readdirSync('/proc/self/fd').filter((fd) => {
      try {
        return readlinkSync(`/proc/self/fd/${fd}`).startsWith(`${dataFile}.journal`);
      } catch {
        return false; // the directory's own descriptor, closed while listing
      }
    }).length;
  const handle = await startPetstore({ port: 0, config: testConfig(), dataFile });
  assert.equal((await post(`${handle.url}/pets`, KEYS.free, { name: 'Rex', categoryId: 1 })).status, 201);
  assert.equal(openJournals(), 1);
  unlinkSync(`${dataFile}.journal`); // the journal loses its name; close() writes the data file anew
  await handle.close();
  assert.equal(openJournals(), 0, 'no journal descriptor left open');
  const reopened = await startPetstore({ port: 0, config: testConfig(), dataFile });
  t.after(() => reopened.close());
  assert.equal((await call(`${reopened.url}/pets/1`, { key: KEYS.free })).status, 200, 'the acknowledged pet was written back');
});
