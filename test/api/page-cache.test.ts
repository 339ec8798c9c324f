// The list-page cache: bounded in entries and in bytes, least recently used pages go first.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PageCache, PetCache } from '../../src/api/index.js';
import { openMemoryStore } from '../../src/store/index.js';

const store = openMemoryStore(); // empty: generation and count stay as they are
const page = (bytes: number): Parameters<PageCache['set']>[1] => ({ generation: store.generation, count: store.count, body: Buffer.alloc(bytes), nextAfter: 1, limit: 20, status: undefined });

test('a full page cache evicts the least recently used page, not everything', () => {
  const cache = new PageCache();
  const n = PageCache.MAX_PAGES;
  for (let i = 0; i < n; i++) cache.set(`k${i}`, page(10));
  assert.ok(cache.get('k0', store), 'k0 is read again: recently used');
  cache.set('new', page(10));
  assert.equal(cache.size, n);
  assert.ok(cache.get('k0', store), 'the page just read is kept');
  assert.ok(cache.get('new', store));
  assert.equal(cache.get('k1', store), undefined, 'the least recently used page went');
  assert.ok(cache.get('k2', store), 'one eviction per insertion');
});

test('the page cache is bounded in bytes; a page above the bound is not cached', () => {
  const cache = new PageCache(100, 1000);
  for (let i = 0; i < 5; i++) cache.set(`k${i}`, page(300));
  assert.equal(cache.size, 3);
  assert.equal(cache.bytes, 900);
  assert.deepEqual([0, 1, 2, 3, 4].map((i) => cache.get(`k${i}`, store) !== undefined), [false, false, true, true, true]);
  cache.set('huge', page(1001));
  assert.equal(cache.get('huge', store), undefined);
  assert.equal(cache.bytes, 900, 'nothing was evicted for it');
  cache.set('k4', page(100)); // replacing an entry counts its new size only
  assert.equal(cache.bytes, 700);
  cache.set('big', page(1000));
  assert.equal(cache.size, 1);
  assert.equal(cache.bytes, 1000);
});

test('the pet cache is bounded in entries and bytes, and a reset (a new generation) misses', async () => {
  const pets = new PetCache(3, 100);
  const version = { generation: 1, count: 0 };
  for (let i = 1; i <= 4; i++) pets.set(String(i), { generation: 1, body: Buffer.alloc(10) });
  assert.equal(pets.size, 3);
  assert.equal(pets.get('1', version), undefined, 'the oldest went');
  assert.ok(pets.get('4', version));
  pets.set('big', { generation: 1, body: Buffer.alloc(95) });
  assert.ok(pets.bytes <= 100);
  assert.equal(pets.get('big', { generation: 2, count: 0 }), undefined);
});
