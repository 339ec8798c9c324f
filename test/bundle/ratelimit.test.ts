// Rate limits as a client sees them, against the built bundle: headers on every status
// code, both 429 shapes, bans, the keyless budget, and limits that survive a restart.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { BUNDLE, KEYS, call, post, startBundle, tempDir, testConfig, writeConfig, type Res } from '../support/bundle.js';

/** The bundle's library face, as an embedder imports it. */
interface PetstoreModule {
  startPetstore(o: Record<string, unknown>): Promise<{ url: string; close(): Promise<void> }>;
  ManualClock: new (wallStartMs?: number) => object;
}

function assertRateHeaders(res: Res, limit: number, what: string): void {
  assert.equal(res.headers.get('x-ratelimit-limit'), String(limit), `${what}: X-RateLimit-Limit`);
  const remaining = Number(res.headers.get('x-ratelimit-remaining'));
  assert.ok(Number.isInteger(remaining) && remaining >= 0 && remaining <= limit, `${what}: Remaining ${remaining}`);
  const reset = Number(res.headers.get('x-ratelimit-reset'));
  const now = Date.now() / 1000;
  assert.ok(Number.isInteger(reset) && reset >= Math.floor(now) && reset <= now + 86_401, `${what}: Reset ${reset}`);
  assert.match(res.headers.get('ratelimit-policy') ?? '', /^"minute";q=\d+;w=60, "day";q=\d+;w=86400$/, `${what}: RateLimit-Policy`);
  assert.match(res.headers.get('ratelimit') ?? '', /^"(minute|day)";r=\d+;t=\d+$/, `${what}: RateLimit`);
}

test('every status code carries the rate-limit headers of the binding bucket', async () => {
  const dir = tempDir();
  // The day bucket binds (100 < 100,000) and refills ~0.001 token/s, so every request shows.
  const config = testConfig();
  (config.keys as unknown[]).push({ key: 'day-bound-key', plan: 'enterprise', limits: { perMinute: 100000, perDay: 100 } });
  const srv = await startBundle(['--memory', '--config', writeConfig(dir, config)], { cwd: dir });
  try {
    const k = 'day-bound-key';
    const json = { 'content-type': 'application/json' };
    const cases: Array<[number, () => Promise<Res>]> = [
      [201, () => post(`${srv.url}/pets`, k, { name: 'a', categoryId: 1 })],
      [200, () => call(`${srv.url}/pets`, { key: k })],
      [200, () => call(`${srv.url}/pets/1`, { key: k })],
      [400, () => call(`${srv.url}/pets?limit=0`, { key: k })],
      [404, () => call(`${srv.url}/pets/999`, { key: k })],
      [404, () => call(`${srv.url}/nowhere`, { key: k })],
      [405, () => call(`${srv.url}/pets`, { method: 'DELETE', key: k })],
      [413, () => call(`${srv.url}/pets`, { method: 'POST', key: k, headers: json, body: 'x'.repeat(70_000) })],
      [415, () => call(`${srv.url}/pets`, { method: 'POST', key: k, headers: { 'content-type': 'text/plain' }, body: '{}' })],
      [501, () => call(`${srv.url}/store/orders`, { key: k })],
    ];
    let previous = 100;
    for (const [status, send] of cases) {
      const res = await send();
      assert.equal(res.status, status, res.text);
      assertRateHeaders(res, 100, `${status}`);
      assert.match(res.headers.get('ratelimit') ?? '', /^"day";r=\d+;t=\d+$/);
      const remaining = Number(res.headers.get('x-ratelimit-remaining'));
      assert.equal(remaining, previous - 1, `${status}: every request counts once`);
      previous = remaining;
    }
    const unauth = await call(`${srv.url}/pets`);
    assert.equal(unauth.status, 401);
    assertRateHeaders(unauth, 1000, '401 (keyless budget of the test config)');
  } finally {
    await srv.stop();
  }
});

test('each plan sees the limits of the default plans', async () => {
  const dir = tempDir();
  const srv = await startBundle(['--memory', '--config', writeConfig(dir)], { cwd: dir });
  try {
    const plans: Array<[string, number, string]> = [
      [KEYS.free, 60, '"minute";q=60;w=60, "day";q=1000;w=86400'],
      [KEYS.pro, 300, '"minute";q=300;w=60, "day";q=10000;w=86400'],
      [KEYS.business, 1000, '"minute";q=1000;w=60, "day";q=100000;w=86400'],
      [KEYS.enterprise, 100000, '"minute";q=100000;w=60, "day";q=10000000;w=86400'],
    ];
    for (const [key, perMinute, policy] of plans) {
      const res = await call(`${srv.url}/pets`, { key });
      assert.equal(res.headers.get('x-ratelimit-limit'), String(perMinute));
      assert.equal(res.headers.get('x-ratelimit-remaining'), String(perMinute - 1));
      assert.equal(res.headers.get('ratelimit-policy'), policy);
      assert.equal(res.headers.get('ratelimit'), `"minute";r=${perMinute - 1};t=1`);
    }
  } finally {
    await srv.stop();
  }
});

test('a free key gets exactly 60 requests a minute, then 429 rate_limited, then a ban', async () => {
  // The bundle embedded with a stopped clock: on a busy machine 64 requests can take more than
  // the second in which the free plan's next token comes back, and then the 61st would be
  // admitted, the bucket doing what it promises. With the clock standing still the count is
  // exact however long the requests take. (It stands at the real time of the start, which
  // the X-RateLimit-Reset checks compare with.)
  const { startPetstore, ManualClock } = (await import(pathToFileURL(BUNDLE).href)) as PetstoreModule;
  const srv = await startPetstore({ port: 0, config: testConfig({ ban: { after: 3, seconds: 120 } }), clock: new ManualClock(Date.now()) });
  try {
    for (let i = 0; i < 60; i++) assert.equal((await call(`${srv.url}/pets?limit=1`, { key: KEYS.free })).status, 200);
    // 1 + ban.after refusals are rate_limited ...
    for (let i = 0; i < 4; i++) {
      const res = await call(`${srv.url}/pets/1`, { key: KEYS.free });
      assert.equal(res.status, 429);
      assert.deepEqual(Object.keys(res.json as object).sort(), ['code', 'message', 'status']);
      assert.equal((res.json as { code: string }).code, 'rate_limited');
      assert.equal(res.headers.get('x-ratelimit-remaining'), '0');
      const retry = Number(res.headers.get('retry-after'));
      assert.ok(Number.isInteger(retry) && retry >= 1 && retry <= 1, `Retry-After ${retry}: one token comes back within a second`);
      assert.equal(res.headers.get('sunset'), 'Thu, 05 Dec 2030 00:00:00 GMT', 'getPet 429s are still deprecated responses');
    }
    // ... and the next one starts the ban.
    const banned = await call(`${srv.url}/pets`, { key: KEYS.free });
    assert.equal(banned.status, 429);
    assert.equal((banned.json as { code: string }).code, 'temporarily_banned');
    const retry = Number(banned.headers.get('retry-after'));
    assert.equal(retry, 120, 'Retry-After is the ban left, all of it (the clock stands still)');
    assertRateHeaders(banned, 60, 'banned');
    // Other keys are not affected.
    assert.equal((await call(`${srv.url}/pets`, { key: KEYS.pro })).status, 200);
  } finally {
    await srv.close();
  }
});

test('keyless and wrong-key requests share a small per-address budget', async () => {
  const dir = tempDir();
  const config = testConfig({ anonymous: { perMinute: 5, perDay: 100 }, ban: { after: 2, seconds: 60 } });
  const srv = await startBundle(['--memory', '--config', writeConfig(dir, config)], { cwd: dir });
  try {
    const statuses: number[] = [];
    const codes: string[] = [];
    for (let i = 0; i < 9; i++) {
      const res = await call(`${srv.url}/pets`, i % 2 === 0 ? {} : { key: `guess-${i}` });
      statuses.push(res.status);
      codes.push((res.json as { code: string }).code);
      assert.equal(res.headers.get('x-ratelimit-limit'), '5');
    }
    assert.deepEqual(statuses, [401, 401, 401, 401, 401, 429, 429, 429, 429]);
    assert.deepEqual(codes.slice(5), ['rate_limited', 'rate_limited', 'rate_limited', 'temporarily_banned']);
    // A valid key from the same address is not limited by that budget.
    assert.equal((await call(`${srv.url}/pets`, { key: KEYS.free })).status, 200);
    // The OpenAPI document needs no key and is limited like keyless requests.
    assert.equal((await call(`${srv.url}/openapi.json`)).status, 429);
  } finally {
    await srv.stop();
  }
});

test('X-Forwarded-For counts only when the proxy is trusted', async () => {
  for (const trustProxy of [false, true]) {
    const dir = tempDir();
    const config = testConfig({ anonymous: { perMinute: 2, perDay: 100 }, trustProxy });
    const srv = await startBundle(['--memory', '--config', writeConfig(dir, config)], { cwd: dir });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++) {
        statuses.push((await call(`${srv.url}/pets`, { headers: { 'x-forwarded-for': `203.0.113.${i}` } })).status);
      }
      assert.deepEqual(statuses, trustProxy ? [401, 401, 401, 401] : [401, 401, 429, 429]);
    } finally {
      await srv.stop();
    }
  }
});

test('day buckets and bans survive a restart', async () => {
  const dir = tempDir();
  const data = join(dir, 'pets.json');
  const config = writeConfig(dir, testConfig({
    plans: { tiny: { perMinute: 100, perDay: 5 } },
    keys: [{ key: 'tiny-key', plan: 'tiny' }, { key: 'ban-key', plan: 'tiny' }],
    ban: { after: 1, seconds: 600 },
  }));
  let srv = await startBundle(['--config', config, '--data', data], { cwd: dir });
  for (let i = 0; i < 3; i++) assert.equal((await call(`${srv.url}/pets`, { key: 'tiny-key' })).status, 200);
  for (let i = 0; i < 5; i++) await call(`${srv.url}/pets`, { key: 'ban-key' });
  for (let i = 0; i < 3; i++) await call(`${srv.url}/pets`, { key: 'ban-key' });
  assert.equal(((await call(`${srv.url}/pets`, { key: 'ban-key' })).json as { code: string }).code, 'temporarily_banned');
  assert.equal(await srv.stop(), 0);

  srv = await startBundle(['--config', config, '--data', data], { cwd: dir });
  try {
    const res = await call(`${srv.url}/pets`, { key: 'tiny-key' });
    assert.equal(res.status, 200);
    // The day bucket binds: 5 - 3 - 1 = 1 left (plus at most a sliver refilled while down).
    assert.equal(res.headers.get('x-ratelimit-limit'), '5');
    assert.equal(res.headers.get('x-ratelimit-remaining'), '1');
    const banned = await call(`${srv.url}/pets`, { key: 'ban-key' });
    assert.equal((banned.json as { code: string }).code, 'temporarily_banned');
    assert.ok(Number(banned.headers.get('retry-after')) > 500);
  } finally {
    await srv.stop();
  }
});

test('GET /openapi.json with a valid key is charged to the key; without one, or with a wrong one, to the address', async () => {
  const dir = tempDir();
  const srv = await startBundle(['--memory', '--config', writeConfig(dir, testConfig({ anonymous: { perMinute: 2, perDay: 100 } }))], { cwd: dir });
  try {
    const doc = `${srv.url}/openapi.json`;
    for (let i = 1; i <= 5; i++) {
      const res = await call(doc, { key: KEYS.free });
      assert.equal(res.status, 200, `keyed fetch ${i}`);
      assert.equal(res.headers.get('x-ratelimit-limit'), '60', 'the free plan\'s budget');
      assert.equal(res.headers.get('x-ratelimit-remaining'), String(60 - i));
    }
    // The per-address budget (2 a minute) was not touched by the keyed fetches.
    const first = await call(doc);
    assert.equal(first.status, 200);
    assert.equal(first.headers.get('x-ratelimit-limit'), '2');
    assert.equal(first.headers.get('x-ratelimit-remaining'), '1');
    const wrong = await call(doc, { key: 'not-a-key' });
    assert.equal(wrong.status, 200, 'a wrong key is no key here: served, no 401');
    assert.equal(wrong.headers.get('x-ratelimit-remaining'), '0');
    assert.equal((await call(doc)).status, 429);
    assert.equal((await call(doc, { key: 'not-a-key' })).status, 429);
    assert.equal((await call(doc, { key: KEYS.free })).status, 200, 'the key still has its own budget');
  } finally {
    await srv.stop();
  }
});
