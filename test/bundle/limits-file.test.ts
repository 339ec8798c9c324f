// The config's limitsFile: the in-process limiter keeps the keys' buckets and bans there, so a
// restart keeps a spent key spent (docs/rate-limits.md, Restarts) also where no data file is (PostgreSQL store
// without Redis, or pets in memory). Without it and without a data file, limits start full.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { call, startBundle, tempDir, testConfig, writeConfig } from '../support/bundle.js';

const KEY = 'day3-key';
const config = (extra: Record<string, unknown>): Record<string, unknown> => testConfig({
  keys: [{ key: KEY, plan: 'enterprise', name: 'day3', limits: { perMinute: 100, perDay: 3 } }],
  ...extra,
});

async function spend(url: string): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < 4; i++) statuses.push((await call(`${url}/pets`, { key: KEY })).status);
  return statuses;
}

test('limitsFile keeps a spent key spent across a restart, with pets in memory', async () => {
  const dir = tempDir();
  const file = writeConfig(dir, config({ limitsFile: 'state/limits.json' }));
  const first = await startBundle(['--config', file, '--memory'], { cwd: dir });
  assert.deepEqual(await spend(first.url), [200, 200, 200, 429]);
  assert.equal(await first.stop(), 0, first.stderr());
  assert.ok(existsSync(join(dir, 'state', 'limits.json')), 'saved at the stop, relative to the config file');
  const second = await startBundle(['--config', file, '--memory'], { cwd: dir });
  const res = await call(`${second.url}/pets`, { key: KEY });
  assert.equal(res.status, 429, res.text);
  assert.equal(await second.stop(), 0);
});

test('without limitsFile and without a data file, limits start full at a restart (as before)', async () => {
  const dir = tempDir();
  const file = writeConfig(dir, config({}));
  const first = await startBundle(['--config', file, '--memory'], { cwd: dir });
  assert.deepEqual(await spend(first.url), [200, 200, 200, 429]);
  assert.equal(await first.stop(), 0);
  const second = await startBundle(['--config', file, '--memory'], { cwd: dir });
  assert.equal((await call(`${second.url}/pets`, { key: KEY })).status, 200);
  assert.equal(await second.stop(), 0);
});
