// Every start failure is a StartError, told apart by its kind; ConfigError and StoreOpenError
// are StartErrors, and the bundle exports the classes an embedder catches.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { StartError } from '../../src/core/index.js';
import { ConfigError } from '../../src/config/index.js';
import { StoreOpenError } from '../../src/store/index.js';
import { startPetstore } from '../../src/server/start.js';
import { BUNDLE, tempDir, testConfig } from '../support/bundle.js';

async function kindOf(start: Promise<unknown>): Promise<string> {
  try {
    const handle = await start;
    await (handle as { close(): Promise<void> }).close();
  } catch (err) {
    assert.ok(err instanceof StartError, `a StartError: ${String(err)}`);
    assert.ok(err.message.length > 0);
    return err.kind;
  }
  assert.fail('the start succeeded');
}

test('each start failure is a StartError with its kind', async (t) => {
  const dir = tempDir();
  await t.test('config', async () => {
    assert.equal(await kindOf(startPetstore({ port: 0, config: { colour: 'blue' } as never })), 'config');
    assert.equal(await kindOf(startPetstore({ port: 0, config: join(dir, 'missing.json') })), 'config');
  });
  await t.test('data', async () => {
    const data = join(dir, 'corrupt.json');
    writeFileSync(data, '{ not json');
    assert.equal(await kindOf(startPetstore({ port: 0, dataFile: data })), 'data');
    writeFileSync(join(dir, 'file'), '');
    assert.equal(await kindOf(startPetstore({ port: 0, dataFile: join(dir, 'file', 'sub', 'pets.json') })), 'data');
  });
  await t.test('limits', async () => {
    const data = join(dir, 'pets.json');
    writeFileSync(`${data}.limits.json`, '{"version": 99}');
    assert.equal(await kindOf(startPetstore({ port: 0, dataFile: data })), 'limits');
  });
  await t.test('seed', async () => {
    const seed = [{ name: 'b', categoryId: 1, id: 5 }, { name: 'a', categoryId: 1, id: 3 }];
    assert.equal(await kindOf(startPetstore({ port: 0, seed })), 'seed');
  });
  await t.test('listen', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as { port: number }).port;
    try {
      assert.equal(await kindOf(startPetstore({ port, config: testConfig() })), 'listen');
    } finally {
      blocker.close();
    }
  });
});

test('ConfigError and StoreOpenError are StartErrors', () => {
  const config = new ConfigError('x.json', ['port must be an integer']);
  assert.ok(config instanceof StartError);
  assert.equal(config.kind, 'config');
  assert.equal(config.name, 'ConfigError');
  const data = new StoreOpenError('pets.json', 'Data file pets.json is in use.');
  assert.ok(data instanceof StartError);
  assert.equal(data.kind, 'data');
  assert.equal(data.name, 'StoreOpenError');
});

test('the bundle exports StartError and ConfigError, one class hierarchy', async () => {
  const lib = await import(pathToFileURL(BUNDLE).href) as typeof import('../../src/petstore.js');
  assert.equal(typeof lib.StartError, 'function');
  assert.ok(lib.ConfigError.prototype instanceof lib.StartError);
  await assert.rejects(lib.startPetstore({ port: 0, config: { kyes: [] } as never }), (err: unknown) =>
    err instanceof lib.StartError && err instanceof lib.ConfigError && err.kind === 'config' && /"kyes"/.test(err.message));
});
