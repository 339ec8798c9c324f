import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ROUTES, openApiRoute, type RouteSpec } from '../../src/api/index.js';
import { Router } from '../../src/http/router.js';

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

test('every operation of the route table is found at its path, path parameters named', () => {
  // The table the app serves, added the way createApp adds it (under /v1).
  const all = [...ROUTES, openApiRoute(ROUTES, 'test')];
  const served = new Router<RouteSpec>();
  for (const route of all) served.add(route.method, `/v1${route.path}`, route);
  for (const route of all) {
    const path = `/v1${route.path.replace(/\{\w+\}/g, '7')}`;
    const m = served.match(route.method, path);
    assert.ok(m.kind === 'found' && m.handler === route, `${route.method} ${path} finds ${route.operationId}`);
    for (const p of route.parameters.filter((x) => x.in === 'path')) assert.equal(m.params[p.name], '7', `${route.operationId}: ${p.name}`);
  }
});

test('several path parameters are captured in order, each match its own object', () => {
  const r = new Router<string>()
    .add('GET', '/v1/a/{first}/b/{second}/{third}', 'three')
    .add('GET', '/v1/pets/{petId}', 'one');
  const m = r.match('GET', '/v1/a/x1/b/y22/z333');
  assert.ok(m.kind === 'found' && m.handler === 'three');
  assert.deepEqual({ ...m.params }, { first: 'x1', second: 'y22', third: 'z333' });
  // A failed attempt on one template leaves nothing behind in the next one's params.
  const one = r.match('GET', '/v1/pets/9');
  const two = r.match('GET', '/v1/pets/10');
  assert.ok(one.kind === 'found' && two.kind === 'found');
  assert.deepEqual({ ...one.params }, { petId: '9' });
  assert.deepEqual({ ...two.params }, { petId: '10' });
  assert.notEqual(one.params, two.params);
  // An empty segment where a parameter stands matches nothing.
  assert.equal(r.match('GET', '/v1/a//b/y/z').kind, 'not_found');
});

/** The rule the router keeps, written the plain way: split both on '/', segment by segment. */
function reference(template: string, path: string): Record<string, string> | undefined {
  const want = template.split('/');
  const got = path.split('/');
  if (want.length !== got.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < want.length; i++) {
    const w = want[i] as string;
    const g = got[i] as string;
    if (w.startsWith('{')) {
      if (g === '') return undefined;
      params[w.slice(1, -1)] = g;
    } else if (w !== g) return undefined;
  }
  return params;
}

test('static paths: each found by its own text among those of its length, long ones too', () => {
  // Paths below 256 characters are compared with the static paths of their length; longer
  // ones are looked up in a Map. Both must find exactly the registered text.
  const long = `/v1/${'x'.repeat(300)}`;
  const r = new Router<string>()
    .add('GET', '/v1/aa', 'aa').add('GET', '/v1/ab', 'ab').add('POST', '/v1/ab', 'ab-post').add('GET', '/v1/b', 'b')
    .add('GET', long, 'long').add('GET', '/v1/{id}', 'param');
  const table: Array<[string, string, string]> = [
    ['GET', '/v1/aa', 'found:aa'], ['GET', '/v1/ab', 'found:ab'], ['POST', '/v1/ab', 'found:ab-post'],
    ['HEAD', '/v1/ab', 'found:ab'], ['GET', '/v1/b', 'found:b'], ['GET', long, 'found:long'],
    ['DELETE', '/v1/aa', 'method_not_allowed'], ['DELETE', long, 'method_not_allowed'],
    ['GET', '/v1/ac', 'found:param'], ['GET', `${long}y`, 'found:param'], ['GET', `${long}/y`, 'not_found'], ['GET', `/v1/${'x'.repeat(299)}y`, 'found:param'],
    ['GET', '/v1/AA', 'found:param'], ['GET', '/v2/aa', 'not_found'],
  ];
  for (const [method, path, want] of table) {
    const m = r.match(method, path);
    assert.equal(m.kind === 'found' ? `found:${m.handler}` : m.kind, want, `${method} ${path.slice(0, 40)}`);
  }
});

test('dynamic templates match exactly as splitting on slashes would, over generated paths', () => {
  // A small deterministic generator (no Math.random: a failure can be replayed).
  let seed = 12345;
  const next = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed % n;
  };
  const pieces = ['', 'a', 'b', 'ab', 'v1', 'pets', '7', '{x}', '{y}', '{z}'];
  let compared = 0;
  for (let t = 0; t < 300; t++) {
    const segments = Array.from({ length: 1 + next(4) }, () => pieces[next(pieces.length)] as string);
    // Distinct parameter names, as the router requires (a template left without one is a static
    // path, held to the same rule).
    let k = 0;
    const template = `/${segments.map((s) => (s.startsWith('{') || k === 0 && s === '' ? `{p${k++}}` : s)).join('/')}`;
    const router = new Router<string>().add('GET', template, 'route');
    for (let p = 0; p < 40; p++) {
      const words = ['', 'a', 'b', 'ab', 'v1', 'pets', '7', 'x/y', '//', 'a/'];
      const path = p % 2 === 0
        ? template.replace(/\{p\d+\}/g, () => words[next(words.length)] as string)
        : `/${Array.from({ length: next(5) }, () => words[next(words.length)] as string).join('/')}`;
      const want = reference(template, path);
      const m = router.match('GET', path);
      if (want === undefined) assert.equal(m.kind, 'not_found', `${template} ${path}`);
      else {
        assert.ok(m.kind === 'found', `${template} ${path}`);
        assert.deepEqual({ ...m.params }, want, `${template} ${path}`);
      }
      compared++;
    }
  }
  assert.equal(compared, 12000);
});
