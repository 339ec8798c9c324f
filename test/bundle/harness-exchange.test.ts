// The harness's second part against the built bundle: the journal keeps the whole exchange
// and waits for requests, faults match a key or a header and answer any status or body, a
// request's Prefer chooses its own fault, and every bad value is a 400 naming it.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { KEYS, call, startBundle, tempDir, testConfig, writeConfig, type Res, type Running } from '../support/bundle.js';

const ADMIN_KEY = 'admin-key-for-exchange-0123';

function root(srv: Running): string {
  return srv.url.replace(/\/v1$/, '');
}

function admin(srv: Running, method: string, path: string, body?: unknown): Promise<Res> {
  return call(`${root(srv)}/__admin${path}`, {
    method, key: ADMIN_KEY, ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  });
}

async function withService(fn: (srv: Running) => Promise<void>, admin: Record<string, unknown> = {}): Promise<void> {
  const dir = tempDir();
  const srv = await startBundle(['--memory', '--config', writeConfig(dir, testConfig({ admin: { key: ADMIN_KEY, ...admin } }))], { cwd: dir });
  try {
    await fn(srv);
  } finally {
    await srv.stop();
  }
}

interface Entry {
  operation: string | null; key: string | null; headers: Record<string, string>; status: number; body: unknown;
  response: { status: number; headers: Record<string, string>; body: unknown };
}

async function entries(srv: Running, query = ''): Promise<Entry[]> {
  const res = await admin(srv, 'GET', `/requests${query}`);
  assert.equal(res.status, 200, res.text);
  return (res.json as { requests: Entry[] }).requests;
}

describe('the journal keeps the whole exchange', () => {
  test('operation, request headers (the key by its name), the answer\'s status, headers and body', async () => {
    await withService(async (srv) => {
      const created = await call(`${srv.url}/pets`, {
        method: 'POST', key: KEYS.pro, headers: { 'content-type': 'application/json', 'x-trace-id': 't-1', 'user-agent': 'harness/1.0' },
        body: JSON.stringify({ name: 'Rex', categoryId: 1 }),
      });
      assert.equal(created.status, 201);
      await call(`${srv.url}/pets/9`, { key: 'not-a-key-of-this-config' });
      await call(`${srv.url}/nothing`, { key: KEYS.pro });
      const [create, wrong, none] = await entries(srv);
      assert.ok(create && wrong && none);
      assert.equal(create.operation, 'createPet');
      assert.equal(create.headers['x-trace-id'], 't-1');
      assert.equal(create.headers['user-agent'], 'harness/1.0');
      assert.equal(create.headers.authorization, 'Bearer pro-test');
      assert.deepEqual(create.response.body, created.json);
      assert.equal(create.response.status, 201);
      assert.equal(create.response.headers['x-request-id'], created.headers.get('x-request-id'));
      assert.ok(create.response.headers.location?.endsWith('/v1/pets/1'));
      assert.equal(wrong.headers.authorization, 'Bearer <unknown>');
      assert.equal(wrong.response.status, 401);
      assert.equal((wrong.response.body as { code: string }).code, 'unauthorized');
      assert.equal(none.operation, null);
      const text = (await admin(srv, 'GET', '/requests')).text;
      assert.ok(!text.includes(KEYS.pro) && !text.includes('not-a-key-of-this-config'), 'no key is ever shown');
    });
  });

  test('filters: operation, pathPrefix, header (all must match); count waits for requests', async () => {
    await withService(async (srv) => {
      for (const [tcase, run] of [['a', 'r1'], ['b', 'r1'], ['a', 'r2']]) {
        await call(`${srv.url}/pets`, { key: KEYS.pro, headers: { 'x-case': tcase as string, 'x-run': run as string } });
      }
      await call(`${srv.url}/pets/1`, { key: KEYS.pro });
      const count = async (q: string): Promise<unknown> => (await admin(srv, 'GET', `/requests/count?${q}`)).json;
      assert.deepEqual(await count('operation=listPets'), { count: 3 });
      assert.deepEqual(await count('pathPrefix=/v1/pets/'), { count: 1 });
      assert.deepEqual(await count('header=x-case:a'), { count: 2 });
      assert.deepEqual(await count('header=X-Case:a&header=x-run:r2'), { count: 1 });
      assert.deepEqual(await count('header=x-case:a&atLeast=2&timeoutMs=0'), { count: 2, met: true, waitedMs: 0 });
      // A wait that a request ends: asked first, answered once the request is recorded.
      const waiting = admin(srv, 'GET', '/requests/count?operation=createPet&atLeast=1&timeoutMs=30000');
      let answered = false;
      void waiting.then(() => { answered = true; });
      await call(`${srv.url}/pets/2`, { key: KEYS.pro });
      assert.equal(answered, false, 'a request that does not match does not end the wait');
      await call(`${srv.url}/pets`, { method: 'POST', key: KEYS.pro, headers: { 'content-type': 'application/json' }, body: '{"name":"Late","categoryId":1}' });
      const waited = (await waiting).json as { count: number; met: boolean; waitedMs: number };
      assert.deepEqual({ count: waited.count, met: waited.met }, { count: 1, met: true });
      const missed = (await admin(srv, 'GET', '/requests/count?status=500&atLeast=1&timeoutMs=50')).json as { count: number; met: boolean; waitedMs: number };
      assert.deepEqual({ count: missed.count, met: missed.met }, { count: 0, met: false });
    });
  });

  const BAD: Array<[string, string, string]> = [
    ['/requests/count?header=no-colon', 'header', 'a header filter without a colon'],
    ['/requests?header=:v', 'header', 'a header filter without a name'],
    ['/requests?operation=dropTables', 'operation', 'an unknown operation'],
    ['/requests?pathPrefix=v1', 'pathPrefix', 'a relative path prefix'],
    ['/requests/count?atLeast=0', 'atLeast', 'atLeast 0'],
    ['/requests/count?atLeast=100001', 'atLeast', 'atLeast past the largest journal'],
    ['/requests/count?atLeast=x', 'atLeast', 'atLeast not a number'],
    ['/requests/count?atLeast=1&timeoutMs=60001', 'timeoutMs', 'timeoutMs past a minute'],
    ['/requests/count?atLeast=1&timeoutMs=-1', 'timeoutMs', 'a negative timeoutMs'],
    ['/requests/count?timeoutMs=5', 'timeoutMs', 'timeoutMs without atLeast'],
    ['/requests?atLeast=1', 'atLeast', 'atLeast on a listing'],
  ];
  test('a bad filter is a 400 naming it', async () => {
    await withService(async (srv) => {
      for (const [path, field, what] of BAD) {
        const res = await admin(srv, 'GET', path);
        assert.equal(res.status, 400, `${what}: ${res.text}`);
        assert.ok((res.json as { message: string }).message.includes(field), `${what} names ${field}: ${res.text}`);
      }
    });
  });
});

describe('faults for any test', () => {
  test('by key (a name, or null for none) and by header; any status 400..599; a body and headers of the test\'s choosing', async () => {
    await withService(async (srv) => {
      assert.equal((await admin(srv, 'POST', '/faults', { operation: 'listPets', key: 'pro-test', status: 500, count: 5 })).status, 200);
      const five = await call(`${srv.url}/pets`, { key: KEYS.pro });
      assert.equal(five.status, 500);
      assert.deepEqual({ ...(five.json as object), message: undefined }, { code: 'internal_error', message: undefined, status: 500 });
      assert.equal((await call(`${srv.url}/pets`, { key: KEYS.free })).status, 200, 'another key is not caught');
      await admin(srv, 'DELETE', '/faults');
      await admin(srv, 'POST', '/faults', { operation: '*', key: null, status: 418 });
      const teapot = await call(`${srv.url}/openapi.json`);
      assert.equal(teapot.status, 418);
      assert.equal((teapot.json as { code: string }).code, 'injected_fault');
      await admin(srv, 'POST', '/faults', {
        operation: 'getPet', header: { name: 'X-Test-Case', value: 't42' }, status: 502, body: { upstream: 'down' }, headers: { 'X-Fault': 'yes', 'Retry-After': '7' }, count: 3,
      });
      assert.equal((await call(`${srv.url}/pets/1`, { key: KEYS.pro, headers: { 'x-test-case': 't41' } })).status, 404, 'another test\'s header is not caught');
      const mine = await call(`${srv.url}/pets/1`, { key: KEYS.pro, headers: { 'x-test-case': 't42' } });
      assert.equal(mine.status, 502);
      assert.deepEqual(mine.json, { upstream: 'down' });
      assert.equal(mine.headers.get('x-fault'), 'yes');
      assert.equal(mine.headers.get('retry-after'), '7');
      const listed = ((await admin(srv, 'GET', '/faults')).json as { faults: Array<Record<string, unknown>> }).faults;
      assert.deepEqual(listed.map((f) => [f.operation, f.status, f.remaining]), [['getPet', 502, 2]], 'the keyless one was used up');
      assert.deepEqual(listed[0]?.header, { name: 'x-test-case', value: 't42' });
      assert.deepEqual(listed[0]?.body, { upstream: 'down' });
    });
  });

  test('two faults of one operation with different matches are both armed; the same match replaces', async () => {
    await withService(async (srv) => {
      for (const value of ['a', 'b', 'b']) await admin(srv, 'POST', '/faults', { operation: 'listPets', header: { name: 'x-case', value }, status: value === 'a' ? 503 : 504, count: 10 });
      assert.equal(((await admin(srv, 'GET', '/faults')).json as { faults: unknown[] }).faults.length, 2);
      assert.equal((await call(`${srv.url}/pets`, { key: KEYS.pro, headers: { 'x-case': 'a' } })).status, 503);
      assert.equal((await call(`${srv.url}/pets`, { key: KEYS.pro, headers: { 'x-case': 'b' } })).status, 504);
    });
  });

  const BAD: Array<[string, Record<string, unknown>, string]> = [
    ['a status under 400', { operation: 'listPets', status: 399 }, 'status'],
    ['a status over 599', { operation: 'listPets', status: 600 }, 'status'],
    ['a key that is not a name', { operation: 'listPets', status: 500, key: 7 }, 'key'],
    ['a header match without a value', { operation: 'listPets', status: 500, header: { name: 'x' } }, 'header'],
    ['a header match as text', { operation: 'listPets', status: 500, header: 'x:y' }, 'header'],
    ['a body without a status', { operation: 'listPets', kind: 'empty', body: 1 }, 'body'],
    ['headers without a status', { operation: 'listPets', delayMs: 1, headers: { 'x-a': 'b' } }, 'headers'],
    ['a framing header', { operation: 'listPets', status: 500, headers: { 'Transfer-Encoding': 'chunked' } }, 'headers'],
    ['a header value with a line break', { operation: 'listPets', status: 500, headers: { 'x-a': 'b\r\nx: y' } }, 'headers'],
  ];
  test('a bad fault is a 400 naming the field, and arms nothing', async () => {
    await withService(async (srv) => {
      for (const [what, body, field] of BAD) {
        const res = await admin(srv, 'POST', '/faults', body);
        assert.equal(res.status, 400, `${what}: ${res.text}`);
        assert.ok((res.json as { message: string }).message.includes(field), `${what} names ${field}: ${res.text}`);
      }
      assert.deepEqual((await admin(srv, 'GET', '/faults')).json, { faults: [] });
    });
  });
});

describe('Prefer: a fault for one request', () => {
  test('with admin.preferFaults: code, delay, fault, with Preference-Applied; an unknown preference is ignored', async () => {
    await withService(async (srv) => {
      const code = await call(`${srv.url}/pets`, { key: KEYS.pro, headers: { prefer: 'code=503' } });
      assert.equal(code.status, 503);
      assert.equal(code.headers.get('preference-applied'), 'code=503');
      assert.equal(code.headers.get('retry-after'), '1');
      const delayed = await call(`${srv.url}/pets`, { key: KEYS.pro, headers: { prefer: 'respond-async, delay=20' } });
      assert.equal(delayed.status, 200);
      assert.equal(delayed.headers.get('preference-applied'), 'delay=20');
      for (const ignored of ['code=200', 'code=600', 'delay=40000', 'fault=explode', 'return=minimal']) {
        const res = await call(`${srv.url}/pets`, { key: KEYS.pro, headers: { prefer: ignored } });
        assert.equal(res.status, 200, ignored);
        assert.equal(res.headers.get('preference-applied'), null, ignored);
      }
      await assert.rejects(call(`${srv.url}/pets`, { key: KEYS.pro, headers: { prefer: 'fault=reset' } }));
      assert.equal((await call(`${srv.url}/pets`, { key: KEYS.pro })).status, 200, 'the next request is not caught');
    }, { preferFaults: true });
  });

  test('without preferFaults, Prefer is ignored', async () => {
    await withService(async (srv) => {
      const res = await call(`${srv.url}/pets`, { key: KEYS.pro, headers: { prefer: 'code=500' } });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('preference-applied'), null);
    });
  });

  test('preferFaults must be true or false', async () => {
    const dir = tempDir();
    await assert.rejects(startBundle(['--memory', '--config', writeConfig(dir, testConfig({ admin: { key: ADMIN_KEY, preferFaults: 'yes' } }))], { cwd: dir }), /admin\.preferFaults must be true or false/);
  });
});
