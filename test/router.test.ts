import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Router } from '../src/http/router.js';

const router = new Router<string>()
  .add('GET', '/v1/pets', 'list')
  .add('POST', '/v1/pets', 'create')
  .add('GET', '/v1/pets/{petId}', 'get')
  .add('GET', '/v1/store/orders', 'orders');

const cases: Array<[string, string, string]> = [
  ['GET', '/v1/pets', 'found:list'],
  ['POST', '/v1/pets', 'found:create'],
  ['HEAD', '/v1/pets', 'found:list'],
  ['GET', '/v1/pets/42', 'found:get'],
  ['GET', '/v1/store/orders', 'found:orders'],
  ['DELETE', '/v1/pets', 'method_not_allowed:GET, POST, HEAD'],
  ['POST', '/v1/pets/1', 'method_not_allowed:GET, HEAD'],
  ['GET', '/v1/pets/', 'not_found'],
  ['GET', '/v1/pets/1/2', 'not_found'],
  ['GET', '/v1/Pets', 'not_found'],
  ['GET', '/v1', 'not_found'],
  ['GET', '', 'not_found'],
];
for (const [method, path, expected] of cases) {
  test(`${method} ${JSON.stringify(path)} -> ${expected}`, () => {
    const m = router.match(method, path);
    const got = m.kind === 'found' ? `found:${m.handler}` : m.kind === 'method_not_allowed' ? `method_not_allowed:${m.allow}` : m.kind;
    assert.equal(got, expected);
  });
}

test('path parameters are captured', () => {
  const m = router.match('GET', '/v1/pets/abc');
  assert.equal(m.kind, 'found');
  if (m.kind === 'found') assert.deepEqual({ ...m.params }, { petId: 'abc' });
});

test('a route cannot be registered twice', () => {
  assert.throws(() => new Router<string>().add('GET', '/a', 'x').add('GET', '/a', 'y'), /twice/);
});

test('routes() lists every route', () => {
  assert.equal([...router.routes()].length, 4);
});
