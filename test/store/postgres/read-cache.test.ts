// Creates through the read cache on a real PostgreSQL store: the answer's text is the pet's
// own JSON (as petJson writes it, whatever the name holds), the pet is kept for the next get,
// and a batch is kept or not by the store generation it was handed over in: one handed over
// after a new generation was known ran after the reset or seed that made it, one handed over
// before may have run before it.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { StoreGeneration, silentLogger } from '../../../src/core/index.js';
import { openPostgresStore, ReadCachedStore } from '../../../src/store/index.js';
import { petJson } from '../../../src/store/codec.js';
import { skipUnless } from '../../support/engines.js';
import { startPostgres } from '../../support/postgres.js';

const skip = skipUnless('PostgreSQL store tests', ['postgres']);

async function setUp(t: TestContext) {
  const pg = await startPostgres({ t });
  const db = await openPostgresStore(pg.url, { logger: silentLogger });
  const gen = new StoreGeneration(async () => 'e:next');
  gen.observe('e:0');
  const cache = new ReadCachedStore(db, gen);
  t.after(() => cache.close());
  return { cache, gen };
}

test('creates through the read cache: answered with the pet\'s own JSON text, and kept for the next get', { skip }, async (t) => {
  const { cache } = await setUp(t);
  const names = ['Rex', 'quote " and \\ backslash', 'tab\tnewline\n', 'ünïcødé 🐕', '</script>', '\u2028 line separator \u2028'];
  const inputs = names.flatMap((name, i) => [
    { name, categoryId: i - 2 },
    { name, categoryId: 2 ** 40 + i, status: 'sold' as const },
  ]);
  const made = await Promise.all(inputs.map((input) => cache.create(input)));
  made.forEach((stored, i) => {
    assert.deepEqual(stored.pet, { id: i + 1, ...inputs[i] });
    assert.equal(stored.json, petJson(stored.pet));
    assert.deepEqual(Object.keys(stored.pet), Object.keys(JSON.parse(stored.json)), 'the canonical key order');
  });
  for (const stored of made) assert.equal(await cache.get(stored.pet.id), stored, 'from memory: the very object');
  assert.equal(cache.stats.petHits, made.length);
  assert.equal(cache.stats.misses, 0);
});

test('a create asked for before a new generation was known, handed over after it: kept', { skip }, async (t) => {
  const { cache, gen } = await setUp(t);
  const created = cache.create({ name: 'after', categoryId: 1 });
  // The batch goes on the next turn of the loop: the generation moves on before it is handed over.
  gen.observe('e:1');
  const stored = await created;
  assert.equal(await cache.get(stored.pet.id), stored);
  assert.equal(cache.stats.petHits, 1);
});

test('a batch handed over before a new generation was known, answered after it: not kept', { skip }, async (t) => {
  const { cache, gen } = await setUp(t);
  const created = cache.create({ name: 'before', categoryId: 1 });
  await new Promise((resolve) => setImmediate(resolve));
  gen.observe('e:1');
  const stored = await created;
  assert.deepEqual((await cache.get(stored.pet.id))?.pet, stored.pet, 'read again from PostgreSQL');
  assert.equal(cache.stats.petHits, 0);
  assert.equal(cache.stats.misses, 1);
});
