// GET /metrics against the built bundle: the figures parsed line by line and checked against
// the requests made; off by default; no key or key name in it; promtool accepts it.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { KEYS, call, post, startBundle, tempDir, testConfig, writeConfig } from '../support/bundle.js';
import { checkWithPromtool, noPromtool } from '../support/promtool.js';

/** Series (name and labels as written) -> value, from an exposition; fails on a malformed line. */
function parse(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('# HELP ') || line.startsWith('# TYPE ')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{[^}]*\})?) (\S+)$/.exec(line);
    assert.ok(m, `a sample line: ${line}`);
    out.set(m[1] as string, Number(m[2]));
  }
  return out;
}

async function scrape(base: string): Promise<{ text: string; series: Map<string, number> }> {
  const res = await call(`${base.replace(/\/v1$/, '')}/metrics`);
  assert.equal(res.status, 200, res.text);
  assert.equal(res.headers.get('content-type'), 'text/plain; version=0.0.4; charset=utf-8');
  return { text: res.text, series: parse(res.text) };
}

const req = (op: string, status: number): string => `petstore_http_requests_total{operation="${op}",status="${status}"}`;

describe('metrics on', () => {
  test('requests by operation and status, durations, 401s and 429s, pets and store writes match what was done', async () => {
    const dir = tempDir();
    const config = testConfig({ metrics: true, plans: { free: { perMinute: 3, perDay: 1000 }, pro: { perMinute: 300, perDay: 10000 }, business: { perMinute: 1000, perDay: 100000 } } });
    const srv = await startBundle(['--data', join(dir, 'pets.json'), '--config', writeConfig(dir, config)], { cwd: dir });
    try {
      for (let i = 0; i < 3; i++) assert.equal((await post(`${srv.url}/pets`, KEYS.pro, { name: `m${i}`, categoryId: i })).status, 201);
      for (let i = 0; i < 4; i++) assert.equal((await call(`${srv.url}/pets`, { key: KEYS.pro })).status, 200);
      assert.equal((await call(`${srv.url}/pets?limit=0`, { key: KEYS.pro })).status, 400);
      assert.equal((await call(`${srv.url}/pets/99`, { key: KEYS.pro })).status, 404);
      assert.equal((await call(`${srv.url}/pets`)).status, 401);
      assert.equal((await call(`${srv.url}/pets`, { key: 'not-a-key-123' })).status, 401);
      assert.equal((await call(`${srv.url}/pets`, { headers: { authorization: 'Basic YTpi' } })).status, 401);
      assert.equal((await call(`${srv.url}/nowhere`, { key: KEYS.pro })).status, 404);
      // The free plan allows 3 a minute: the 4th and 5th are refused.
      const free = [];
      for (let i = 0; i < 5; i++) free.push((await call(`${srv.url}/pets`, { key: KEYS.free })).status);
      assert.deepEqual(free, [200, 200, 200, 429, 429]);
      assert.equal((await call(`${srv.url.replace(/\/v1$/, '')}/healthz`)).status, 200);

      const { text, series } = await scrape(srv.url);
      assert.equal(series.get(req('createPet', 201)), 3);
      assert.equal(series.get(req('listPets', 200)), 4 + 3);
      assert.equal(series.get(req('listPets', 400)), 1);
      assert.equal(series.get(req('listPets', 401)), 3);
      assert.equal(series.get(req('listPets', 429)), 2);
      assert.equal(series.get(req('getPet', 404)), 1);
      assert.equal(series.get(req('unknown', 404)), 1);
      assert.equal(series.get(req('healthz', 200)), 1);
      const total = [...series].filter(([k]) => k.startsWith('petstore_http_requests_total{')).reduce((n, [, v]) => n + v, 0);
      assert.equal(total, 3 + 4 + 1 + 1 + 3 + 1 + 5 + 1, 'every request answered is counted once');
      assert.equal(series.get('petstore_http_request_duration_seconds_count{operation="listPets"}'), 4 + 1 + 3 + 5);
      assert.equal(series.get('petstore_http_request_duration_seconds_bucket{operation="createPet",le="+Inf"}'), 3);
      assert.equal(series.get('petstore_unauthorized_total{reason="missing_key"}'), 1);
      assert.equal(series.get('petstore_unauthorized_total{reason="invalid_key"}'), 1);
      assert.equal(series.get('petstore_unauthorized_total{reason="other_scheme"}'), 1);
      assert.equal(series.get('petstore_rate_limit_refusals_total{reason="rate_limited"}'), 2);
      assert.equal(series.get('petstore_rate_limit_refusals_total{reason="temporarily_banned"}'), 0);
      assert.equal(series.get('petstore_store_pets'), 3);
      assert.equal(series.get('petstore_store_batch_size_sum'), 3, 'three creates went to disk');
      assert.ok((series.get('petstore_store_write_duration_seconds_count') ?? 0) >= 1);
      assert.ok((series.get('petstore_store_journal_bytes') ?? 0) > 0);
      assert.ok((series.get('process_resident_memory_bytes') ?? 0) > 1e6);
      assert.ok((series.get('process_open_fds') ?? 0) > 0);
      assert.ok(Math.abs((series.get('process_start_time_seconds') ?? 0) - Date.now() / 1000) < 600);
      assert.ok(series.has('nodejs_eventloop_lag_p99_seconds'));
      for (const secret of [...Object.values(KEYS), 'not-a-key-123', 'free-test', 'pro-test', 'business-test', 'enterprise-test']) {
        assert.ok(!text.includes(secret), `no key or key name in the exposition (${secret})`);
      }

      // A scrape is not counted, limited or authenticated.
      const again = await scrape(srv.url);
      assert.equal([...again.series].filter(([k]) => k.startsWith('petstore_http_requests_total{')).reduce((n, [, v]) => n + v, 0), total);
    } finally {
      await srv.stop();
    }
  });

  test('promtool check metrics accepts a scrape of the running service', { skip: noPromtool }, async () => {
    const dir = tempDir();
    const srv = await startBundle(['--data', join(dir, 'pets.json'), '--config', writeConfig(dir, testConfig({ metrics: true }))], { cwd: dir });
    try {
      await post(`${srv.url}/pets`, KEYS.pro, { name: 'p', categoryId: 1 });
      await call(`${srv.url}/pets`, { key: KEYS.pro });
      await call(`${srv.url}/pets`);
      const { text } = await scrape(srv.url);
      const r = checkWithPromtool(text);
      assert.equal(r.status, 0, r.output);
      assert.equal(r.output.trim(), '', 'no lint problem');
    } finally {
      await srv.stop();
    }
  });

  test('a flood of concurrent scrapes costs one gather per second: the others get the same text', async () => {
    const dir = tempDir();
    const srv = await startBundle(['--memory', '--config', writeConfig(dir, testConfig({ metrics: true }))], { cwd: dir });
    try {
      const base = srv.url.replace(/\/v1$/, '');
      const texts: string[] = [];
      for (let round = 0; round < 3; round++) {
        const answers = await Promise.all(Array.from({ length: 60 }, () => call(`${base}/metrics`, { headers: { connection: 'close' } })));
        for (const a of answers) {
          assert.equal(a.status, 200);
          texts.push(a.text);
        }
      }
      // Each gather's text differs (CPU seconds, memory, the loop's lag move): one each would
      // give about 180 different texts.
      const distinct = new Set(texts).size;
      assert.ok(distinct <= 12, `${distinct} different texts in 180 scrapes`);
      // Past the window, a scrape sees what was done since.
      await call(`${srv.url}/pets`, { key: KEYS.pro });
      await new Promise((r) => setTimeout(r, 1_100));
      const after = await scrape(srv.url);
      assert.equal(after.series.get(req('listPets', 200)), 1);
    } finally {
      await srv.stop();
    }
  });

  test('POST /metrics is a 405 naming GET and HEAD; HEAD has no body', async () => {
    const dir = tempDir();
    const srv = await startBundle(['--memory', '--config', writeConfig(dir, testConfig({ metrics: true }))], { cwd: dir });
    try {
      const base = srv.url.replace(/\/v1$/, '');
      const res = await call(`${base}/metrics`, { method: 'POST' });
      assert.equal(res.status, 405);
      assert.equal(res.headers.get('allow'), 'GET, HEAD');
      assert.deepEqual(Object.keys(res.json as object).sort(), ['code', 'message', 'status']);
      const head = await call(`${base}/metrics`, { method: 'HEAD' });
      assert.equal(head.status, 200);
      assert.equal(head.text, '');
    } finally {
      await srv.stop();
    }
  });
});

test('metrics off (the default): /metrics is an unknown path, 401 without a key, 404 with one', async () => {
  const dir = tempDir();
  const srv = await startBundle(['--memory', '--config', writeConfig(dir)], { cwd: dir });
  try {
    const base = srv.url.replace(/\/v1$/, '');
    assert.equal((await call(`${base}/metrics`)).status, 401);
    const res = await call(`${base}/metrics`, { key: KEYS.pro });
    assert.equal(res.status, 404);
    assert.equal((res.json as { code: string }).code, 'not_found');
  } finally {
    await srv.stop();
  }
});
