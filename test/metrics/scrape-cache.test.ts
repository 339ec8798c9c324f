// The scrape cache: one gather per window, shared by concurrent scrapes; a fresh one after
// the window; a failed gather is not kept. The clock is injected.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ScrapeCache, ServiceMetrics, cachedScrape } from '../../src/metrics/index.js';

test('N concurrent scrapes share one gather; within the window the text is served as is; after it, a new gather', async () => {
  let now = 0;
  let n = 0;
  let release: () => void = () => undefined;
  const cache = new ScrapeCache({
    maxAgeMs: 1000,
    now: () => now,
    gather: () => new Promise<string>((resolve) => { release = () => resolve(`text ${++n}`); }),
  });
  const concurrent = Array.from({ length: 50 }, () => cache.text());
  assert.equal(cache.gathers, 1);
  release();
  assert.deepEqual(new Set(await Promise.all(concurrent)), new Set(['text 1']));
  now = 999;
  assert.equal(cache.text(), 'text 1', 'served from the cache, synchronously');
  assert.equal(cache.gathers, 1);
  now = 1000;
  const next = cache.text();
  assert.equal(cache.gathers, 2);
  release();
  assert.equal(await next, 'text 2');
});

test('a gather that fails is not kept: the next scrape gathers again', async () => {
  let fail = true;
  const cache = new ScrapeCache({ now: () => 0, gather: async () => { if (fail) throw new Error('gone'); return 'ok'; } });
  await assert.rejects(Promise.resolve(cache.text()), /gone/);
  fail = false;
  assert.equal(await cache.text(), 'ok');
  assert.equal(cache.gathers, 2);
});

test('cachedScrape: alone, the recorder rendered; with workers, every snapshot merged; empty answers fall back to its own', async () => {
  const recorder = new ServiceMetrics({ operations: ['listPets'], version: '1.0.0' });
  try {
    recorder.request('listPets', 200, 1);
    const alone = cachedScrape(recorder, undefined, { now: () => 0 });
    assert.match(await alone(), /^petstore_http_requests_total\{operation="listPets",status="200"\} 1$/m);
    const other = new ServiceMetrics({ operations: ['listPets'], version: '1.0.0' });
    other.request('listPets', 200, 1);
    other.request('listPets', 200, 1);
    let calls = 0;
    const shared = cachedScrape(recorder, async () => { calls++; return [recorder.snapshot(), other.snapshot(), 'not a snapshot']; }, { now: () => 0 });
    const [a, b] = await Promise.all([shared(), shared()]);
    assert.equal(a, b);
    assert.equal(calls, 1);
    assert.match(a, /^petstore_http_requests_total\{operation="listPets",status="200"\} 3$/m);
    other.close();
    const lonely = cachedScrape(recorder, async () => [], { now: () => 0 });
    assert.match(await lonely(), /status="200"\} 1$/m);
  } finally {
    recorder.close();
  }
});
