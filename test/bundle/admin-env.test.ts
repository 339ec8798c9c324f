// Admin without a config file's `admin`: PETSTORE_ADMIN_KEY for the command line, the `admin`
// option for startPetstore. Every admin default applies, the key is never printed or logged,
// it survives a reload, and a config's own `admin` wins where both are given.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { BUNDLE, KEYS, call, runBundle, startBundle, tempDir, testConfig, until, writeConfig, type Running } from '../support/bundle.js';

const ENV_KEY = 'env-admin-key-0123456789';
const FILE_KEY = 'file-admin-key-0123456789';
const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');

async function reset(url: string, key: string): Promise<number> {
  return (await call(`${url.replace(/\/v1$/, '')}/__admin/reset`, { method: 'POST', key })).status;
}

function neverShown(srv: Running, key: string): void {
  assert.ok(!srv.stdout().includes(key), 'the key is not in the log');
  assert.ok(!srv.stderr().includes(key), 'the key is not on stderr');
}

test('PETSTORE_ADMIN_KEY turns admin on with the defaults (journal of 1,000), survives a reload, is never printed', async () => {
  const dir = tempDir();
  const file = writeConfig(dir, testConfig());
  const srv = await startBundle(['--memory', '--config', file, '--log-level', 'debug'], { cwd: dir, env: { PETSTORE_ADMIN_KEY: ENV_KEY } });
  try {
    assert.equal(await reset(srv.url, ENV_KEY), 204);
    assert.equal(await reset(srv.url, KEYS.free), 401, 'an API key is not the admin key');
    assert.equal((await call(`${srv.url}/pets`, { key: KEYS.free })).status, 200);
    const journal = await call(`${srv.url.replace(/\/v1$/, '')}/__admin/requests`, { key: ENV_KEY });
    assert.equal(journal.status, 200);
    assert.ok((journal.json as { requests: unknown[] }).requests.length >= 1, 'the journal records (its default size)');
    // A reload of a file without admin keeps the key from the environment.
    writeFileSync(file, JSON.stringify(testConfig({ anonymous: { perMinute: 999, perDay: 99999 } })));
    srv.proc.kill('SIGHUP');
    await until('the reload', () => /config reloaded/.test(srv.stderr()));
    assert.equal(await reset(srv.url, ENV_KEY), 204);
    neverShown(srv, ENV_KEY);
  } finally {
    assert.equal(await srv.stop(), 0);
  }
});

test('a config with its own admin wins over PETSTORE_ADMIN_KEY', async () => {
  const dir = tempDir();
  const file = writeConfig(dir, testConfig({ admin: { sha256: sha256(FILE_KEY) } }));
  const srv = await startBundle(['--memory', '--config', file], { cwd: dir, env: { PETSTORE_ADMIN_KEY: ENV_KEY } });
  try {
    assert.equal(await reset(srv.url, FILE_KEY), 204);
    assert.equal(await reset(srv.url, ENV_KEY), 401);
    neverShown(srv, ENV_KEY);
  } finally {
    assert.equal(await srv.stop(), 0);
  }
});

test('a bad PETSTORE_ADMIN_KEY stops the start (exit 2) naming the variable, never the key; one equal to an API key too', async () => {
  const dir = tempDir();
  const file = writeConfig(dir, testConfig());
  const short = await runBundle(['--memory', '--config', file, '--port', '0'], { cwd: dir, env: { PETSTORE_ADMIN_KEY: 'short-key' } });
  assert.equal(short.code, 2, short.stderr);
  assert.match(short.stderr, /PETSTORE_ADMIN_KEY must be at least 16 characters long \(it has 9\)/);
  assert.ok(!short.stderr.includes('short-key'));
  const bad = await runBundle(['--memory', '--config', file, '--port', '0'], { cwd: dir, env: { PETSTORE_ADMIN_KEY: 'not a token, with spaces!' } });
  assert.equal(bad.code, 2, bad.stderr);
  assert.match(bad.stderr, /PETSTORE_ADMIN_KEY must be a non-empty string of token characters/);
  assert.ok(!bad.stderr.includes('with spaces'));
  const clash = writeConfig(tempDir(), testConfig({ keys: [{ key: ENV_KEY, plan: 'free', name: 'clash' }] }));
  const clashed = await runBundle(['--memory', '--config', clash, '--port', '0'], { cwd: dir, env: { PETSTORE_ADMIN_KEY: ENV_KEY } });
  assert.equal(clashed.code, 1, clashed.stderr);
  assert.match(clashed.stderr, /PETSTORE_ADMIN_KEY is the same key as the API key named "clash"/);
  assert.ok(!clashed.stderr.includes(ENV_KEY));
});

test('startPetstore({ admin }): admin on with the defaults, kept by a reload; the config object\'s admin wins', async () => {
  const { startPetstore } = (await import(pathToFileURL(BUNDLE).href)) as typeof import('../../src/petstore.js');
  const a = await startPetstore({ port: 0, config: testConfig(), admin: { key: ENV_KEY } });
  try {
    assert.equal(await reset(a.url, ENV_KEY), 204);
    await a.reload(testConfig({ anonymous: { perMinute: 999, perDay: 99999 } }));
    assert.equal(await reset(a.url, ENV_KEY), 204);
    await call(`${a.url}/pets`, { key: KEYS.free });
    assert.ok((await a.journal()).requests.length >= 1, 'the journal is on (its default size)');
  } finally {
    await a.close();
  }
  const b = await startPetstore({ port: 0, config: testConfig({ admin: { key: FILE_KEY } }), admin: { key: ENV_KEY } });
  try {
    assert.equal(await reset(b.url, FILE_KEY), 204);
    assert.equal(await reset(b.url, ENV_KEY), 401);
  } finally {
    await b.close();
  }
  await assert.rejects(startPetstore({ port: 0, config: testConfig(), admin: { key: 'short' } }), /admin option\.key must be at least 16 characters/);
});
