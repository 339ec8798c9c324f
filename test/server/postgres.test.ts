// Embedding with pets in PostgreSQL: startPetstore({ store }) serves from the database,
// seed() and reset() reach it, and a store with a dataFile is refused before anything starts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StartError, startPetstore } from '../../src/server/index.js';
import { KEYS, call, post, testConfig } from '../support/bundle.js';
import { skipUnless } from '../support/engines.js';
import { startPostgres } from '../support/postgres.js';

const skip = skipUnless('PostgreSQL embedding tests', ['postgres']);

test('startPetstore({ store }): creates land in PostgreSQL; seed and reset reach it', { skip }, async (t) => {
  const pg = await startPostgres({ t });
  const handle = await startPetstore({ port: 0, config: testConfig(), store: pg.url, seed: [{ id: 7, name: 'seeded', categoryId: 1 }] });
  t.after(() => handle.close());
  const created = await post(`${handle.url}/pets`, KEYS.pro, { name: 'Rex', categoryId: 2 });
  assert.equal(created.status, 201);
  assert.equal(created.text, '{"id":8,"name":"Rex","categoryId":2}');
  assert.equal(created.headers.get('location'), `${handle.url}/pets/8`);
  assert.equal(await pg.psql('SELECT id, name FROM petstore_pets ORDER BY id'), '7|seeded\n8|Rex\n');
  assert.deepEqual(await handle.seed([{ name: 'more', categoryId: 3, status: 'sold' }]), [{ id: 9, name: 'more', categoryId: 3, status: 'sold' }]);
  await handle.reset();
  assert.equal(await pg.psql('SELECT count(*) FROM petstore_pets'), '0\n');
  assert.equal((await call(`${handle.url}/pets`, { key: KEYS.pro })).text, '[]');
  assert.equal((await post(`${handle.url}/pets`, KEYS.pro, { name: 'again', categoryId: 1 })).status, 201);
  assert.equal(await pg.psql('SELECT id FROM petstore_pets'), '1\n', 'ids restart at 1 after reset');
});

test('startPetstore({ store, dataFile }) is refused: one place for the pets', async () => {
  await assert.rejects(startPetstore({ port: 0, store: 'postgres://127.0.0.1:1/x', dataFile: '/tmp/never.json' }), (err: Error) => {
    assert.ok(err instanceof StartError);
    assert.equal(err.message, 'store and dataFile cannot both be given: pets live in PostgreSQL or in a data file');
    return true;
  });
});
