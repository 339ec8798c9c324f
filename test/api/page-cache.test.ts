// The byte caches of pages and pets: bounded in entries and in bytes (what an entry really costs,
// its body in memory of its own), least recently used entries go first.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PageCache, PetCache } from '../../src/api/index.js';
import { MAX_KEPT_LINK } from '../../src/api/page-cache.js';
import { openMemoryStore } from '../../src/store/index.js';
import { liveBytes as live } from '../support/gc.js';

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

test('the page last found is never answered once it was replaced or evicted', () => {
  // get() remembers the last page it found, so that a client asking for the same page again is
  // answered without hashing its query string: any change to the entries must forget it.
  const cache = new PageCache(2, 1 << 20);
  const first = page(10);
  cache.set('limit=20', first);
  assert.equal(cache.get('limit=20', store), first);
  assert.equal(cache.get(`limit=${20}`, store), first, 'the same text as another string');
  const second = page(10);
  cache.set('limit=20', second);
  assert.equal(cache.get('limit=20', store), second, 'the page that replaced it');
  cache.set('limit=5', page(10));
  assert.ok(cache.get('limit=5', store));
  cache.get('limit=20', store);
  cache.set('limit=7', page(10)); // evicts one; 'limit=20' and 'limit=5' were both read since
  cache.set('limit=8', page(10));
  assert.equal(cache.size, 2);
  assert.deepEqual(['limit=20', 'limit=5', 'limit=7', 'limit=8'].map((k) => cache.get(k, store) !== undefined), [false, false, true, true]);
  assert.equal(cache.get('limit=20', store), undefined, 'asked again: still gone');
});

test('the page cache is bounded in bytes, each page counted with its key, its link and its objects; a page above the bound is not cached', () => {
  const probe = new PageCache();
  const each = probe.cost('k0', 300);
  assert.ok(each > 300 + 2 + MAX_KEPT_LINK, 'more than the body: the key, room for the link, the objects');
  const cache = new PageCache(100, 3 * each + 10);
  for (let i = 0; i < 5; i++) cache.set(`k${i}`, page(300));
  assert.equal(cache.size, 3);
  assert.equal(cache.bytes, 3 * each);
  assert.deepEqual([0, 1, 2, 3, 4].map((i) => cache.get(`k${i}`, store) !== undefined), [false, false, true, true, true]);
  cache.set('huge', page(3 * each));
  assert.equal(cache.get('huge', store), undefined);
  assert.equal(cache.bytes, 3 * each, 'nothing was evicted for it');
  cache.set('k4', page(100)); // replacing an entry counts its new size only
  assert.equal(cache.bytes, 2 * each + probe.cost('k4', 100));
  assert.equal(probe.cost('名前', 0) - probe.cost('ab', 0), 0, 'two CJK characters fit where two ASCII ones do (a string is rounded to 8 bytes)');
  assert.ok(probe.cost('名'.repeat(64), 0) - probe.cost('a'.repeat(64), 0) >= 64, 'a CJK character is counted at two bytes');
});

test('a kept body owns its memory: a small Buffer is never kept as a slice of a shared 8 KiB pool slab', () => {
  const pets = new PetCache();
  const sent = Buffer.from('{"id":1,"name":"Rex","categoryId":1}');
  assert.notEqual(sent.buffer.byteLength, sent.length, 'Buffer.from() of a short text is a slice of the pool');
  pets.set(1, { generation: 1, body: sent });
  const kept = pets.get(1, { generation: 1, count: 0 });
  assert.equal(kept?.body.buffer.byteLength, sent.length);
  assert.deepEqual(kept?.body, sent);
});

test('a full pet cache of pooled bodies holds no more memory than its bound', () => {
  const pets = new PetCache();
  const before = live();
  const waste: Buffer[] = [];
  for (let id = 1; id <= 2 * PetCache.MAX_PETS; id++) {
    // As routes.ts makes them: Buffer.from() of the pet's text, between other short-lived Buffers.
    pets.set(id, { generation: 1, body: Buffer.from(`{"id":${id},"name":"${'名'.repeat(40)}","categoryId":1}`) });
    waste.push(Buffer.from('x'.repeat(400)));
    if (waste.length > 8) waste.shift();
  }
  const added = live() - before;
  assert.ok(pets.bytes <= PetCache.MAX_BYTES && pets.bytes > PetCache.MAX_BYTES - 1000, 'full to its bound in bytes');
  assert.ok(added <= pets.bytes, `live memory grew by ${(added / 2 ** 20).toFixed(1)} MiB for ${(pets.bytes / 2 ** 20).toFixed(1)} MiB counted`);
});

test('the pet cache is bounded in entries and bytes, and a reset (a new generation) misses', async () => {
  const pets = new PetCache(3, 5000);
  const version = { generation: 1, count: 0 };
  for (let i = 1; i <= 4; i++) pets.set(i, { generation: 1, body: Buffer.alloc(10) });
  assert.equal(pets.size, 3);
  assert.equal(pets.bytes, 3 * pets.cost(1, 10));
  assert.equal(pets.get(1, version), undefined, 'the oldest went');
  assert.ok(pets.get(4, version));
  pets.set(99, { generation: 1, body: Buffer.alloc(95) });
  assert.ok(pets.bytes <= 5000);
  assert.equal(pets.get(99, { generation: 2, count: 0 }), undefined);
});
