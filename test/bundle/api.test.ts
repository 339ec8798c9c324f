// Black-box tests of every operation, status code and bad input, against the built bundle.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { KEYS, call, followPages, nextUrl, post, startBundle, tempDir, writeConfig, type Res, type Running } from '../support/bundle.js';

let srv: Running;
const key = KEYS.enterprise;

function assertError(res: Res, status: number, code: string, mention?: string): void {
  assert.equal(res.status, status, res.text);
  assert.match(res.headers.get('content-type') ?? '', /^application\/json; charset=utf-8$/);
  const body = res.json as { code: string; message: string; status: number };
  assert.deepEqual(Object.keys(body).sort(), ['code', 'message', 'status']);
  assert.equal(body.code, code);
  assert.equal(body.status, status);
  assert.equal(typeof body.message, 'string');
  if (mention) assert.ok(body.message.includes(mention), `message "${body.message}" should name ${mention}`);
}

async function count(): Promise<number> {
  let n = 0;
  await followPages(`${srv.url}/pets?limit=100`, key, (res) => {
    n += (res.json as unknown[]).length;
  });
  return n;
}

before(async () => {
  const dir = tempDir();
  srv = await startBundle(['--memory', '--config', writeConfig(dir)], { cwd: dir });
  // 30 pets: statuses cycle available, pending, sold, (none).
  const statuses = ['available', 'pending', 'sold', undefined];
  for (let i = 1; i <= 30; i++) {
    const res = await post(`${srv.url}/pets`, key, { name: `pet${i}`, categoryId: i % 3, status: statuses[i % 4] });
    assert.equal(res.status, 201, res.text);
  }
});
after(() => srv.stop());

describe('authentication', () => {
  const cases: Array<{ name: string; header?: string; status: number; challenge: RegExp }> = [
    { name: 'no Authorization header', status: 401, challenge: /^Bearer realm="petstore"$/ },
    { name: 'empty header', header: '', status: 401, challenge: /^Bearer realm="petstore"$/ },
    { name: 'Basic scheme', header: 'Basic dXNlcjpwYXNz', status: 401, challenge: /^Bearer realm="petstore"$/ },
    { name: 'Bearer without a token', header: 'Bearer ', status: 401, challenge: /error="invalid_token"/ },
    { name: 'wrong key', header: 'Bearer not-a-key', status: 401, challenge: /error="invalid_token"/ },
    { name: 'key with one character off', header: `Bearer ${key.slice(0, -1)}X`, status: 401, challenge: /error="invalid_token"/ },
    { name: 'key as a prefix', header: `Bearer ${key}x`, status: 401, challenge: /error="invalid_token"/ },
  ];
  for (const tc of cases) {
    test(tc.name, async () => {
      const headers: Record<string, string> = {};
      if (tc.header !== undefined) headers.authorization = tc.header;
      const res = await call(`${srv.url}/pets`, { headers });
      assertError(res, 401, 'unauthorized');
      assert.match(res.headers.get('www-authenticate') ?? '', tc.challenge);
      assert.ok(!res.text.includes(key), 'the key never appears in a response');
    });
  }
  for (const scheme of ['Bearer', 'bearer', 'BEARER', 'bEaReR']) {
    test(`scheme ${scheme} accepted`, async () => {
      const res = await call(`${srv.url}/pets`, { headers: { authorization: `${scheme} ${key}` } });
      assert.equal(res.status, 200);
    });
  }
  test('every operation requires the key', async () => {
    for (const [method, path] of [['GET', '/pets'], ['POST', '/pets'], ['GET', '/pets/1'], ['GET', '/store/orders'], ['GET', '/nope']] as const) {
      const res = await call(`${srv.url}${path}`, { method });
      assertError(res, 401, 'unauthorized');
    }
  });
});

describe('GET /pets', () => {
  test('default limit 20, ascending ids, Pet shape', async () => {
    const res = await call(`${srv.url}/pets`, { key });
    assert.equal(res.status, 200);
    const pets = res.json as Array<Record<string, unknown>>;
    assert.equal(pets.length, 20);
    assert.deepEqual(pets.map((p) => p.id), Array.from({ length: 20 }, (_, i) => i + 1));
    assert.deepEqual(pets[0], { id: 1, name: 'pet1', categoryId: 1, status: 'pending' });
    assert.deepEqual(pets[2], { id: 3, name: 'pet3', categoryId: 0 });
  });
  const ok: Array<[string, number]> = [['1', 1], ['100', 30], ['25', 25], ['007', 7]];
  for (const [limit, n] of ok) {
    test(`limit=${limit} returns ${n}`, async () => {
      const res = await call(`${srv.url}/pets?limit=${limit}`, { key });
      assert.equal(res.status, 200);
      assert.equal((res.json as unknown[]).length, n);
    });
  }
  const bad = ['0', '101', 'abc', '1.5', '1e1', '', '-1', '+5', '%20', '1000000000000'];
  for (const limit of bad) {
    test(`limit=${JSON.stringify(limit)} is 400`, async () => {
      assertError(await call(`${srv.url}/pets?limit=${limit}`, { key }), 400, 'invalid_request', 'limit');
    });
  }
  test('limit given twice is 400', async () => {
    assertError(await call(`${srv.url}/pets?limit=5&limit=5`, { key }), 400, 'invalid_request', 'limit');
  });
  for (const status of ['available', 'pending', 'sold']) {
    test(`status=${status} filters`, async () => {
      const res = await call(`${srv.url}/pets?status=${status}&limit=100`, { key });
      const pets = res.json as Array<{ id: number; status: string }>;
      assert.ok(pets.length > 0);
      assert.ok(pets.every((p) => p.status === status));
      assert.deepEqual(pets.map((p) => p.id), [...pets.map((p) => p.id)].sort((a, b) => a - b));
    });
  }
  for (const status of ['AVAILABLE', 'unknown', '', 'available ', 'sold,pending']) {
    test(`status=${JSON.stringify(status)} is 400`, async () => {
      assertError(await call(`${srv.url}/pets?status=${encodeURIComponent(status)}`, { key }), 400, 'invalid_request', 'status');
    });
  }
  test('status given twice is 400', async () => {
    assertError(await call(`${srv.url}/pets?status=sold&status=sold`, { key }), 400, 'invalid_request', 'status');
  });
  test('bad percent-encoding is 400', async () => {
    assertError(await call(`${srv.url}/pets?status=%E0%A4%A`, { key }), 400, 'invalid_request');
  });
  test('pages: next links visit every pet once, filters carried over', async () => {
    const seen: number[] = [];
    await followPages(`${srv.url}/pets?limit=7&status=available`, key, (res) => {
      for (const p of res.json as Array<{ id: number; status: string }>) {
        assert.equal(p.status, 'available');
        seen.push(p.id);
      }
      const next = nextUrl(res.headers.get('link'));
      if (next) assert.match(next, /[?&]status=available/);
    }, 9);
    const all = ((await call(`${srv.url}/pets?limit=100&status=available`, { key })).json as Array<{ id: number }>).map((p) => p.id);
    assert.deepEqual(seen, all);
  });
  test('a bad cursor is 400', async () => {
    assertError(await call(`${srv.url}/pets?cursor=abc`, { key }), 400, 'invalid_request', 'cursor');
  });
});

describe('POST /pets', () => {
  test('201 with the Pet, a new sequential id, client id ignored', async () => {
    const before = await count();
    const res = await post(`${srv.url}/pets`, key, { id: 999, name: 'Rex', categoryId: 7, status: 'available' });
    assert.equal(res.status, 201);
    const pet = res.json as { id: number };
    assert.deepEqual(pet, { id: before + 1, name: 'Rex', categoryId: 7, status: 'available' });
    assert.equal(res.headers.get('location'), `${srv.url}/pets/${pet.id}`);
    const got = await call(`${srv.url}/pets/${pet.id}`, { key });
    assert.deepEqual(got.json, pet);
  });
  test('status is optional', async () => {
    const res = await post(`${srv.url}/pets`, key, { name: 'NoStatus', categoryId: 0 });
    assert.equal(res.status, 201);
    assert.equal((res.json as Record<string, unknown>).status, undefined);
  });
  test('__proto__ and constructor keys are plain data', async () => {
    const res = await call(`${srv.url}/pets`, {
      method: 'POST', key, headers: { 'content-type': 'application/json' },
      body: '{"name":"Proto","categoryId":1,"__proto__":{"status":"sold","admin":true},"constructor":{"prototype":{"x":1}}}',
    });
    assert.equal(res.status, 201);
    assert.deepEqual(Object.keys(res.json as object).sort(), ['categoryId', 'id', 'name']);
  });

  const bodies: Array<{ name: string; body: string; mention: string }> = [
    { name: 'missing name', body: '{"categoryId":1}', mention: 'name' },
    { name: 'empty name', body: '{"name":"","categoryId":1}', mention: 'name' },
    { name: 'blank name', body: '{"name":"   ","categoryId":1}', mention: 'name' },
    { name: 'name too long', body: JSON.stringify({ name: 'x'.repeat(257), categoryId: 1 }), mention: 'name' },
    { name: 'name a number', body: '{"name":5,"categoryId":1}', mention: 'name' },
    { name: 'name null', body: '{"name":null,"categoryId":1}', mention: 'name' },
    { name: 'missing categoryId', body: '{"name":"a"}', mention: 'categoryId' },
    { name: 'categoryId a string', body: '{"name":"a","categoryId":"1"}', mention: 'categoryId' },
    { name: 'categoryId fractional', body: '{"name":"a","categoryId":1.5}', mention: 'categoryId' },
    { name: 'categoryId beyond safe range', body: '{"name":"a","categoryId":9007199254740993}', mention: 'categoryId' },
    { name: 'categoryId huge', body: '{"name":"a","categoryId":1e400}', mention: 'categoryId' },
    { name: 'categoryId null', body: '{"name":"a","categoryId":null}', mention: 'categoryId' },
    { name: 'categoryId boolean', body: '{"name":"a","categoryId":true}', mention: 'categoryId' },
    { name: 'status unknown', body: '{"name":"a","categoryId":1,"status":"lost"}', mention: 'status' },
    { name: 'status wrong case', body: '{"name":"a","categoryId":1,"status":"Sold"}', mention: 'status' },
    { name: 'status null', body: '{"name":"a","categoryId":1,"status":null}', mention: 'status' },
    { name: 'body an array', body: '[{"name":"a","categoryId":1}]', mention: 'object' },
    { name: 'body null', body: 'null', mention: 'object' },
    { name: 'body a string', body: '"pet"', mention: 'object' },
    { name: 'malformed JSON', body: '{"name":"a",', mention: 'JSON' },
    { name: 'trailing garbage', body: '{"name":"a","categoryId":1} x', mention: 'JSON' },
    { name: 'deeply nested', body: `{"name":"a","categoryId":1,"x":${'['.repeat(20000)}${']'.repeat(20000)}}`, mention: '' },
  ];
  for (const tc of bodies) {
    test(`400 for ${tc.name}, store unchanged`, async () => {
      const before = await count();
      const res = await call(`${srv.url}/pets`, { method: 'POST', key, headers: { 'content-type': 'application/json' }, body: tc.body });
      if (tc.name === 'deeply nested') assert.ok(res.status === 400 || res.status === 201, res.text);
      else assertError(res, 400, 'invalid_request', tc.mention);
      if (res.status === 400) assert.equal(await count(), before);
    });
  }
  test('all problems are named at once', async () => {
    const res = await post(`${srv.url}/pets`, key, { status: 'x' });
    assertError(res, 400, 'invalid_request');
    const msg = (res.json as { message: string }).message;
    for (const field of ['name', 'categoryId', 'status']) assert.ok(msg.includes(field), msg);
  });
  test('a blank name is named beside the other problems', async () => {
    const res = await call(`${srv.url}/pets`, { method: 'POST', key, headers: { 'content-type': 'application/json' }, body: '{"name":"   ","categoryId":1.5}' });
    assertError(res, 400, 'invalid_request');
    const msg = (res.json as { message: string }).message;
    assert.match(msg, /name must not be blank/);
    assert.match(msg, /categoryId must be an integer/);
  });
  test('invalid UTF-8 is 400', async () => {
    const body = Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xc3, 0x28]), Buffer.from('","categoryId":1}')]);
    assertError(await call(`${srv.url}/pets`, { method: 'POST', key, headers: { 'content-type': 'application/json' }, body }), 400, 'invalid_request', 'UTF-8');
  });
  test('no body is 400', async () => {
    assertError(await call(`${srv.url}/pets`, { method: 'POST', key }), 400, 'invalid_request', 'body');
  });
  for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/json; charset=latin1', 'application/jsonx']) {
    test(`Content-Type ${type} is 415`, async () => {
      const before = await count();
      assertError(await call(`${srv.url}/pets`, { method: 'POST', key, headers: { 'content-type': type }, body: '{"name":"a","categoryId":1}' }), 415, 'unsupported_media_type', 'Content-Type');
      assert.equal(await count(), before);
    });
  }
  for (const type of ['application/json', 'application/json; charset=utf-8', 'Application/JSON;charset=UTF-8', 'application/merge-patch+json']) {
    test(`Content-Type ${type} is accepted`, async () => {
      const res = await call(`${srv.url}/pets`, { method: 'POST', key, headers: { 'content-type': type }, body: '{"name":"a","categoryId":1}' });
      assert.equal(res.status, 201, res.text);
    });
  }
  test('a body over 64 KiB is 413, and the client sees it', async () => {
    const before = await count();
    const big = JSON.stringify({ name: 'a', categoryId: 1, pad: 'x'.repeat(70 * 1024) });
    assertError(await call(`${srv.url}/pets`, { method: 'POST', key, headers: { 'content-type': 'application/json' }, body: big }), 413, 'payload_too_large');
    assert.equal(await count(), before);
  });
  for (const [label, headers] of [['keep-alive', {}], ['Connection: close', { connection: 'close' }]] as const) {
    test(`a chunked upload of 5 MiB gets 413, not a reset (${label})`, async () => {
      for (let attempt = 0; attempt < 3; attempt++) {
        const status = await new Promise<number>((resolve, reject) => {
          const req = request(`${srv.url}/pets`, {
            method: 'POST',
            agent: false,
            headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
          }, (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          });
          req.on('error', reject);
          const chunk = Buffer.alloc(64 * 1024, 0x20);
          let sent = 0;
          const pump = (): void => {
            while (sent < 80) {
              sent++;
              if (!req.write(chunk)) {
                req.once('drain', pump);
                return;
              }
            }
            req.end();
          };
          req.write('{"name":"a","categoryId":1,"pad":"');
          pump();
        });
        assert.equal(status, 413);
      }
    });
  }
});

describe('GET /pets/{petId} (deprecated)', () => {
  function assertDeprecated(res: Res): void {
    assert.match(res.headers.get('deprecation') ?? '', /^@\d+$/);
    assert.equal(res.headers.get('sunset'), 'Thu, 05 Dec 2030 00:00:00 GMT');
    assert.equal(res.headers.get('link'), `<${srv.url}/pets>; rel="successor-version"`);
  }
  test('200 with the Pet', async () => {
    const res = await call(`${srv.url}/pets/2`, { key });
    assert.equal(res.status, 200);
    assert.deepEqual(res.json, { id: 2, name: 'pet2', categoryId: 2, status: 'sold' });
    assertDeprecated(res);
  });
  const cases: Array<[string, number, string]> = [
    ['100000', 404, 'not_found'],
    ['0', 404, 'not_found'],
    ['-5', 404, 'not_found'],
    ['9223372036854775807', 404, 'not_found'],
    ['9223372036854775808', 400, 'invalid_request'],
    ['-9223372036854775809', 400, 'invalid_request'],
    ['99999999999999999999999', 400, 'invalid_request'],
    ['abc', 400, 'invalid_request'],
    ['1.5', 400, 'invalid_request'],
    ['1e3', 400, 'invalid_request'],
    ['%31', 400, 'invalid_request'],
    [' 1', 400, 'invalid_request'],
  ];
  for (const [id, status, code] of cases) {
    test(`petId ${JSON.stringify(id)} is ${status}, with deprecation headers`, async () => {
      const res = await call(`${srv.url}/pets/${id}`, { key });
      assertError(res, status, code, status === 400 ? 'petId' : undefined);
      assertDeprecated(res);
    });
  }
  test('401 carries the deprecation headers too', async () => {
    const res = await call(`${srv.url}/pets/1`);
    assertError(res, 401, 'unauthorized');
    assertDeprecated(res);
  });
});

describe('other routes', () => {
  test('GET /store/orders is 501 with a key', async () => {
    assertError(await call(`${srv.url}/store/orders`, { key }), 501, 'not_implemented');
  });
  test('unknown path is 404 after authentication', async () => {
    assertError(await call(`${srv.url}/cats`, { key }), 404, 'not_found');
    assertError(await call(`${srv.url}/pets/`, { key }), 404, 'not_found');
    assertError(await call(`${srv.url.replace('/v1', '')}/v2/pets`, { key }), 404, 'not_found');
  });
  const notAllowed: Array<[string, string, string]> = [
    ['DELETE', '/pets', 'GET, POST, HEAD'],
    ['PUT', '/pets', 'GET, POST, HEAD'],
    ['PATCH', '/pets/1', 'GET, HEAD'],
    ['POST', '/pets/1', 'GET, HEAD'],
    ['DELETE', '/store/orders', 'GET, HEAD'],
  ];
  for (const [method, path, allow] of notAllowed) {
    test(`${method} ${path} is 405 with Allow`, async () => {
      const res = await call(`${srv.url}${path}`, { method, key });
      assertError(res, 405, 'method_not_allowed', method);
      assert.equal(res.headers.get('allow'), allow);
    });
  }
  test('HEAD /pets answers like GET without a body', async () => {
    const res = await call(`${srv.url}/pets`, { method: 'HEAD', key });
    assert.equal(res.status, 200);
    assert.equal(res.text, '');
  });
  test('GET /healthz needs no key', async () => {
    const res = await call(`${srv.url.replace('/v1', '')}/healthz`);
    assert.equal(res.status, 200);
    assert.deepEqual(res.json, { status: 'ok' });
  });
  test('X-Request-Id is echoed when sane, generated otherwise', async () => {
    const given = await call(`${srv.url}/pets?limit=1`, { key, headers: { 'x-request-id': 'abc-123' } });
    assert.equal(given.headers.get('x-request-id'), 'abc-123');
    const made = await call(`${srv.url}/pets?limit=1`, { key, headers: { 'x-request-id': 'bad id with spaces' } });
    const generated = made.headers.get('x-request-id') ?? '';
    assert.match(generated, /^[0-9a-f]{8}-[0-9a-z]+$/);
    const next = (await call(`${srv.url}/pets?limit=1`, { key })).headers.get('x-request-id');
    assert.notEqual(next, generated, 'generated ids are unique');
  });
});
