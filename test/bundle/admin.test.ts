// /__admin against the built bundle: reset, seed and faults with the admin key; 401 for any
// other key (with the keyless budget); 404 without admin in the config; not in the OpenAPI.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { KEYS, call, post, startBundle, tempDir, testConfig, until, writeConfig, type Res, type Running } from '../support/bundle.js';

const ADMIN_KEY = 'admin-key-for-tests-0123';
const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');

function adminCall(srv: Running, method: string, path: string, body?: unknown, key = ADMIN_KEY): Promise<Res> {
  const base = srv.url.replace(/\/v1$/, '');
  return call(`${base}/__admin${path}`, {
    method,
    key,
    ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  });
}

async function withAdmin(fn: (srv: Running, dir: string) => Promise<void>, extra: Record<string, unknown> = {}): Promise<void> {
  const dir = tempDir();
  const config = writeConfig(dir, testConfig({ admin: { sha256: sha256(ADMIN_KEY) }, ...extra }));
  const srv = await startBundle(['--data', join(dir, 'pets.json'), '--config', config], { cwd: dir });
  try {
    await fn(srv, dir);
  } finally {
    await srv.stop();
  }
}

const ids = async (srv: Running): Promise<number[]> => {
  const res = await call(`${srv.url}/pets?limit=100`, { key: KEYS.enterprise });
  assert.equal(res.status, 200, res.text);
  return (res.json as Array<{ id: number }>).map((p) => p.id);
};

describe('reset and seed', () => {
  test('seed stores a batch (201, the pets as stored, durable), reset empties the store and the limits (204, ids from 1)', async () => {
    const dir = tempDir();
    const config = writeConfig(dir, testConfig({
      admin: { key: ADMIN_KEY },
      plans: { free: { perMinute: 2, perDay: 1000 }, pro: { perMinute: 300, perDay: 10000 }, business: { perMinute: 1000, perDay: 100000 } },
    }));
    const data = join(dir, 'pets.json');
    let srv = await startBundle(['--data', data, '--config', config], { cwd: dir });
    try {
      const seeded = await adminCall(srv, 'POST', '/seed', [{ name: 'Rex', categoryId: 1 }, { name: 'Tom', categoryId: 2, status: 'sold', id: 10 }, { name: 'Kit', categoryId: 3 }]);
      assert.equal(seeded.status, 201, seeded.text);
      assert.deepEqual(seeded.json, [
        { id: 1, name: 'Rex', categoryId: 1 }, { id: 10, name: 'Tom', categoryId: 2, status: 'sold' }, { id: 11, name: 'Kit', categoryId: 3 },
      ]);
      // Durable before the answer: a SIGKILL right after loses nothing.
      await srv.stop('SIGKILL');
      srv = await startBundle(['--data', data, '--config', config], { cwd: dir });
      assert.deepEqual(await ids(srv), [1, 10, 11]);

      for (let i = 0; i < 3; i++) await call(`${srv.url}/pets`, { key: KEYS.free });
      assert.equal((await call(`${srv.url}/pets`, { key: KEYS.free })).status, 429, 'the free key is out of tokens');

      const reset = await adminCall(srv, 'POST', '/reset');
      assert.equal(reset.status, 204);
      assert.equal(reset.text, '');
      assert.deepEqual(await ids(srv), []);
      assert.equal((await call(`${srv.url}/pets`, { key: KEYS.free })).status, 200, 'limits cleared');
      const created = await post(`${srv.url}/pets`, KEYS.pro, { name: 'After', categoryId: 1 });
      assert.equal((created.json as { id: number }).id, 1, 'ids start from 1 again');
    } finally {
      await srv.stop();
    }
  });

  test('a seed with a bad element is refused whole: 400 naming the element, nothing stored', async () => {
    await withAdmin(async (srv) => {
      await post(`${srv.url}/pets`, KEYS.pro, { name: 'Existing', categoryId: 1 });
      const bad = await adminCall(srv, 'POST', '/seed', [{ name: 'Good', categoryId: 1 }, { name: '', categoryId: 'x' }]);
      assert.equal(bad.status, 400);
      assert.match((bad.json as { message: string }).message, /^pets\[1\]: .*name.*categoryId/);
      const badId = await adminCall(srv, 'POST', '/seed', [{ name: 'Good', categoryId: 1, id: 0 }]);
      assert.equal(badId.status, 400);
      assert.match((badId.json as { message: string }).message, /pets\[0\]: id must be a positive integer/);
      const taken = await adminCall(srv, 'POST', '/seed', [{ name: 'Good', categoryId: 1 }, { name: 'Clash', categoryId: 1, id: 1 }]);
      assert.equal(taken.status, 400, 'an id not above every stored id');
      const notArray = await adminCall(srv, 'POST', '/seed', { name: 'x', categoryId: 1 });
      assert.equal(notArray.status, 400);
      assert.match((notArray.json as { message: string }).message, /JSON array/);
      assert.deepEqual(await ids(srv), [1], 'nothing of a refused seed was stored');
    });
  });
});

describe('who may call them', () => {
  test('an API key, a wrong key or no key: 401 with the keyless budget, which runs out like any 401s', async () => {
    await withAdmin(async (srv) => {
      const asApiKey = await adminCall(srv, 'POST', '/reset', undefined, KEYS.enterprise);
      assert.equal(asApiKey.status, 401);
      assert.equal((asApiKey.json as { code: string }).code, 'unauthorized');
      assert.equal(asApiKey.headers.get('x-ratelimit-limit'), '3', 'the keyless budget');
      assert.match(asApiKey.headers.get('www-authenticate') ?? '', /^Bearer realm="petstore", error="invalid_token"/);
      const noKey = await call(`${srv.url.replace(/\/v1$/, '')}/__admin/reset`, { method: 'POST' });
      assert.equal(noKey.status, 401);
      assert.equal(noKey.headers.get('www-authenticate'), 'Bearer realm="petstore"');
      assert.equal((await adminCall(srv, 'POST', '/seed', [{ name: 'x', categoryId: 1 }], 'wrong-admin-key')).status, 401);
      const limited = await adminCall(srv, 'POST', '/reset', undefined, 'wrong-admin-key');
      assert.equal(limited.status, 429, 'the keyless budget of 3 is spent');
      assert.ok(Number(limited.headers.get('retry-after')) > 0);
      await post(`${srv.url}/pets`, KEYS.pro, { name: 'Kept', categoryId: 1 });
      assert.deepEqual(await ids(srv), [1], 'none of the refused calls changed anything');
      // The admin key itself is not limited, and unknown admin paths and methods are answered.
      assert.equal((await adminCall(srv, 'POST', '/nothing')).status, 404);
      const wrongMethod = await adminCall(srv, 'GET', '/reset');
      assert.equal(wrongMethod.status, 405);
      assert.equal(wrongMethod.headers.get('allow'), 'POST');
    }, { anonymous: { perMinute: 3, perDay: 100 } });
  });

  test('without admin in the config, /__admin is an unknown path: 401 without a key, 404 with one', async () => {
    const dir = tempDir();
    const srv = await startBundle(['--memory', '--config', writeConfig(dir)], { cwd: dir });
    try {
      const base = srv.url.replace(/\/v1$/, '');
      assert.equal((await call(`${base}/__admin/reset`, { method: 'POST' })).status, 401);
      const withKey = await call(`${base}/__admin/reset`, { method: 'POST', key: KEYS.pro });
      assert.equal(withKey.status, 404);
      assert.equal((withKey.json as { code: string }).code, 'not_found');
      const seed = await call(`${base}/__admin/seed`, { method: 'POST', key: ADMIN_KEY, headers: { 'content-type': 'application/json' }, body: '[]' });
      assert.equal(seed.status, 401, 'the admin key of another config opens nothing');
    } finally {
      await srv.stop();
    }
  });

  test('a request without the admin key gets the 401 any path gives: nothing tells that admin is enabled', async () => {
    // Headers that describe the request or the moment, not whether admin exists.
    const varying = new Set(['date', 'x-request-id', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'ratelimit', 'content-length']);
    const answer = (r: Res): unknown => ({
      status: r.status,
      body: r.json,
      headers: [...r.headers].filter(([name]) => !varying.has(name)).sort(),
    });
    const asked = async (base: string): Promise<unknown[]> => {
      const out: unknown[] = [];
      for (const authorization of [undefined, 'Bearer wrong-admin-key', 'Basic YTpi', 'Bearer']) {
        const headers: Record<string, string> = authorization === undefined ? {} : { authorization };
        out.push(answer(await call(`${base}/__admin/reset`, { method: 'POST', headers })));
      }
      return out;
    };
    let withIt: unknown[] = [];
    await withAdmin(async (srv) => {
      withIt = await asked(srv.url.replace(/\/v1$/, ''));
    });
    const dir = tempDir();
    const srv = await startBundle(['--memory', '--config', writeConfig(dir)], { cwd: dir });
    try {
      const without = await asked(srv.url.replace(/\/v1$/, ''));
      assert.equal((withIt[1] as { status: number }).status, 401);
      assert.deepEqual(withIt, without);
    } finally {
      await srv.stop();
    }
  });

  test('an admin key in clear shorter than 16 characters is refused at start, the key not echoed', async () => {
    const dir = tempDir();
    const { runBundle } = await import('../support/bundle.js');
    const r = await runBundle(['--memory', '--port', '0', '--config', writeConfig(dir, testConfig({ admin: { key: 'adm-secret' } }))], { cwd: dir });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /admin\.key must be at least 16 characters long/);
    assert.ok(!r.stderr.includes('adm-secret'));
  });

  test('the admin key must differ from every API key: refused at start, the key not echoed', async () => {
    const dir = tempDir();
    const { runBundle } = await import('../support/bundle.js');
    const r = await runBundle(['--memory', '--port', '0', '--config', writeConfig(dir, testConfig({ admin: { key: KEYS.pro } }))], { cwd: dir });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /admin is the same key as the API key named "pro-test"/);
    assert.ok(!r.stderr.includes(KEYS.pro));
  });

  test('the admin paths are not in the OpenAPI document', async () => {
    await withAdmin(async (srv) => {
      const doc = await call(`${srv.url}/openapi.json`);
      assert.equal(doc.status, 200);
      assert.ok(!doc.text.includes('__admin') && !doc.text.includes('adminReset'));
    });
  });
});

describe('faults', () => {
  test('503 for the next count creates (Error body, Retry-After, limit headers, nothing stored), then normal again', async () => {
    await withAdmin(async (srv) => {
      const set = await adminCall(srv, 'POST', '/faults', { operation: 'createPet', status: 503, count: 2 });
      assert.equal(set.status, 200, set.text);
      assert.deepEqual(set.json, [{ operation: 'createPet', status: 503, retryAfter: 1, remaining: 2, fired: 0 }]);
      for (let i = 0; i < 2; i++) {
        const res = await post(`${srv.url}/pets`, KEYS.pro, { name: `F${i}`, categoryId: 1 });
        assert.equal(res.status, 503);
        assert.deepEqual(Object.keys(res.json as object).sort(), ['code', 'message', 'status']);
        assert.equal((res.json as { code: string; status: number }).code, 'service_unavailable');
        assert.equal(res.headers.get('retry-after'), '1');
        assert.equal(res.headers.get('x-ratelimit-limit'), '300');
      }
      assert.equal((await call(`${srv.url}/pets`, { key: KEYS.pro })).status, 200, 'another operation is not faulted');
      const ok = await post(`${srv.url}/pets`, KEYS.pro, { name: 'Works', categoryId: 1 });
      assert.equal(ok.status, 201);
      assert.equal((ok.json as { id: number }).id, 1, 'the faulted creates stored nothing and took no id');
      assert.deepEqual(await ids(srv), [1]);
    });
  });

  test('429 with its own Retry-After and X-RateLimit-Remaining 0; DELETE and reset clear faults', async () => {
    await withAdmin(async (srv) => {
      assert.equal((await adminCall(srv, 'POST', '/faults', { operation: 'listPets', status: 429, count: 5, retryAfter: 7 })).status, 200);
      const res = await call(`${srv.url}/pets`, { key: KEYS.pro });
      assert.equal(res.status, 429);
      assert.equal((res.json as { code: string }).code, 'rate_limited');
      assert.equal(res.headers.get('retry-after'), '7');
      assert.equal(res.headers.get('x-ratelimit-remaining'), '0');
      const cleared = await adminCall(srv, 'DELETE', '/faults');
      assert.equal(cleared.status, 204);
      assert.equal((await call(`${srv.url}/pets`, { key: KEYS.pro })).status, 200);

      assert.equal((await adminCall(srv, 'POST', '/faults', { operation: 'getPet', status: 503, count: 3 })).status, 200);
      assert.equal((await call(`${srv.url}/pets/1`, { key: KEYS.pro })).status, 503);
      assert.equal((await adminCall(srv, 'POST', '/reset')).status, 204);
      assert.equal((await call(`${srv.url}/pets/1`, { key: KEYS.pro })).status, 404, 'reset cleared the fault');
    });
  });

  test('delayMs makes the next request wait, then answers it normally', async () => {
    await withAdmin(async (srv) => {
      assert.equal((await adminCall(srv, 'POST', '/faults', { operation: 'createPet', delayMs: 400 })).status, 200);
      const started = Date.now();
      const slow = await post(`${srv.url}/pets`, KEYS.pro, { name: 'Slow', categoryId: 1 });
      assert.ok(Date.now() - started >= 390, 'it waited');
      assert.equal(slow.status, 201);
      assert.deepEqual(await ids(srv), [1]);
      const quick = await post(`${srv.url}/pets`, KEYS.pro, { name: 'Quick', categoryId: 1 });
      assert.equal(quick.status, 201);
    });
  });

  test('SIGTERM during a delayMs wait: the waiting create is served at once, stored, and the process exits within the grace', async () => {
    const dir = tempDir();
    const data = join(dir, 'pets.json');
    const config = writeConfig(dir, testConfig({ admin: { key: ADMIN_KEY } }));
    const srv = await startBundle(['--data', data, '--config', config], { cwd: dir });
    // Longer than the 10 s grace: before the fix the process stayed until the wait was over.
    assert.equal((await adminCall(srv, 'POST', '/faults', { operation: 'createPet', delayMs: 30_000, count: 5 })).status, 200);
    const waiting = post(`${srv.url}/pets`, KEYS.pro, { name: 'Waiting', categoryId: 1 });
    // The create is in its wait once the fault has caught it (not after a guessed sleep).
    await until('the fault caught the create', async () => {
      const listed = await adminCall(srv, 'GET', '/faults');
      return (listed.json as { faults: Array<{ fired: number }> }).faults[0]?.fired === 1;
    });
    const stopped = Date.now();
    srv.proc.kill('SIGTERM');
    const answer = await waiting;
    const code = await srv.exited;
    const took = Date.now() - stopped;
    assert.equal(code, 0, srv.stderr());
    assert.equal(answer.status, 201, answer.text);
    // Order, not speed: out before the 30 s wait would have ended (the bug), with 20 s to spare.
    assert.ok(took < 30_000 - 300, `exited ${took} ms after SIGTERM: it waited out the delay`);
    const again = await startBundle(['--data', data, '--config', config], { cwd: dir });
    try {
      assert.deepEqual(await ids(again), [1], 'the create answered 201 is stored');
    } finally {
      await again.stop();
    }
  });

  test('a bad fault is a 400 naming every problem, and sets nothing', async () => {
    await withAdmin(async (srv) => {
      const bad = await adminCall(srv, 'POST', '/faults', { operation: 'dropTables', status: 500, delayMs: -1, count: 0, extra: 1 });
      assert.equal(bad.status, 400);
      const message = (bad.json as { message: string }).message;
      for (const part of ['"extra" is not a known field', 'operation must be one of listPets, createPet', 'status must be 429 or 503', 'delayMs must be', 'count must be']) {
        assert.ok(message.includes(part), `${part} in: ${message}`);
      }
      assert.equal((await adminCall(srv, 'POST', '/faults', 'not an object')).status, 400);
      assert.equal((await post(`${srv.url}/pets`, KEYS.pro, { name: 'Fine', categoryId: 1 })).status, 201);
    });
  });
});
