// startPetstore({ limits }): the embedding API with limits in Redis. Both limiters keep their
// state under their own prefix; reset() deletes it (SCAN by prefix); close() quits the
// connection; a data file's limits file is not used (the state lives in Redis); a bad URL is
// a start error.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { StartError } from '../../src/server/contract.js';
import { REDIS_PREFIXES } from '../../src/server/limiters.js';
import { startPetstore } from '../../src/server/start.js';
import { KEYS, call, tempDir, testConfig } from '../support/bundle.js';
import { skipUnless } from '../support/engines.js';
import { sleep } from '../support/free-port.js';
import { startRedis } from '../support/redis.js';
import { until } from '../support/wait.js';

const skip = skipUnless('startPetstore with limits in Redis', ['redis']);

test('startPetstore({ limits }): keys and addresses in Redis, reset() empties them, close() quits', { skip }, async (t) => {
  const redis = await startRedis({ t });
  const admin = new Redis(redis.url);
  t.after(() => admin.disconnect());
  const dataFile = join(tempDir(), 'pets.json');
  // Another unrelated key in the same database stays.
  await admin.set('someone-else', '1');
  const handle = await startPetstore({ port: 0, config: testConfig(), dataFile, limits: redis.url });
  assert.equal((await call(`${handle.url}/pets`, { key: KEYS.free })).headers.get('x-ratelimit-remaining'), '59');
  assert.equal((await call(`${handle.url}/pets`)).status, 401);
  const keys = (await admin.keys('petstore:*')).sort();
  assert.equal(keys.length, 2, keys.join(' '));
  assert.ok(keys[0]?.startsWith(REDIS_PREFIXES.addresses), keys[0]);
  assert.ok(keys[1]?.startsWith(REDIS_PREFIXES.keys), keys[1]);
  assert.equal(keys.some((k) => k.includes(KEYS.free)), false, 'a key is stored only as its digest');

  await handle.reset();
  assert.deepEqual(await admin.keys('petstore:*'), []);
  assert.equal(await admin.get('someone-else'), '1');
  assert.equal((await call(`${handle.url}/pets`, { key: KEYS.free })).headers.get('x-ratelimit-remaining'), '59');

  const clients = async (): Promise<number> => (await admin.client('LIST') as string).trim().split('\n').length;
  assert.equal(await clients(), 2, 'one connection for both limiters, and ours');
  await handle.close();
  assert.equal(await clients(), 1, 'close() quit the connection');
  assert.equal(existsSync(`${dataFile}.limits.json`), false, 'no limits file: the state lives in Redis');
});

test('startPetstore({ limits }) with a URL that is not a Redis URL: StartError, nothing listening', async () => {
  await assert.rejects(startPetstore({ port: 0, config: testConfig(), limits: 'memcached://h:11211' }),
    (err: unknown) => err instanceof StartError && /^the limits URL must be a redis:\/\/ or rediss:\/\/ URL/.test((err as Error).message));
});

test('POST /__admin/reset with Redis hung or away: 503 that says what changed, and the pets are still there', { skip }, async (t) => {
  const redis = await startRedis({ t });
  const ADMIN = 'admin-key-for-tests-0123';
  const handle = await startPetstore({ port: 0, config: testConfig({ admin: { key: ADMIN } }), limits: redis.url });
  t.after(() => handle.close());
  const base = handle.url.replace(/\/v1$/, '');
  const created = await call(`${handle.url}/pets`, { method: 'POST', key: KEYS.pro, headers: { 'content-type': 'application/json' }, body: '{"name":"Kept","categoryId":1}' });
  assert.equal(created.status, 201, created.text);
  const reset = (): ReturnType<typeof call> => call(`${base}/__admin/reset`, { method: 'POST', key: ADMIN });

  redis.pause();
  const hung = await reset();
  redis.resume();
  assert.equal(hung.status, 503, hung.text);
  assert.equal((hung.json as { code: string }).code, 'service_unavailable');
  assert.match((hung.json as { message: string }).message, /clearing the rate limits \(Redis did not answer within 250 ms\).*pets, per-address limits and faults are unchanged/);
  assert.ok(Number(hung.headers.get('retry-after')) > 0);
  const list = await call(`${handle.url}/pets`, { key: KEYS.enterprise });
  assert.deepEqual((list.json as Array<{ name: string }>).map((p) => p.name), ['Kept'], 'the store was not emptied');

  await redis.stop();
  const away = await reset();
  assert.equal(away.status, 503, away.text);
  assert.match((away.json as { message: string }).message, /pets, per-address limits and faults are unchanged/);
  await redis.start();
  await until('the reset answered 204 once Redis is back', async () => (await reset()).status === 204);
  assert.deepEqual((await call(`${handle.url}/pets`, { key: KEYS.enterprise })).json, [], 'a reset that works empties the store');
});
