// GET /v1/openapi.json of the built bundle: what it says (servers, security, every operation
// with its parameters, body, statuses and headers), that it is derived from the route table,
// that it holds together by itself (every $ref resolves, every path parameter is declared),
// and that what the service answers matches it. The standard-validator and generated-client
// checks live in test/tools (their own dependencies, not part of npm test).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { get } from 'node:http';
import { ERROR_CODES } from '../../src/core/errors.js';
import { ROUTES } from '../../src/api/routes.js';
import { KEYS, call, post, startBundle, tempDir, testConfig, writeConfig, type Res, type Running } from '../support/bundle.js';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Obj = { [key: string]: Json };

const PRODUCTION = 'https://pets.test.example/v1';
const STAGING = 'https://staging.pets.test.example/v1';
const RATE_HEADERS = ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset', 'RateLimit-Policy', 'RateLimit'];
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

let srv: Running;
let res: Res;
let doc: Obj;

before(async () => {
  const dir = tempDir();
  const config = testConfig({ environments: { production: PRODUCTION, staging: STAGING } });
  srv = await startBundle(['--memory', '--config', writeConfig(dir, config)], { cwd: dir });
  res = await call(`${srv.url}/openapi.json`);
  doc = res.json as Obj;
});
after(() => srv.stop());

function obj(v: Json | undefined, where: string): Obj {
  assert.ok(typeof v === 'object' && v !== null && !Array.isArray(v), `${where} must be an object, got ${JSON.stringify(v)}`);
  return v;
}

function arr(v: Json | undefined, where: string): Json[] {
  assert.ok(Array.isArray(v), `${where} must be an array, got ${JSON.stringify(v)}`);
  return v;
}

/** Resolves a local JSON pointer such as #/components/schemas/Pet (RFC 6901). */
function resolvePointer(ref: string): Json | undefined {
  assert.ok(ref.startsWith('#/'), `only local $refs are used, got ${ref}`);
  let node: Json | undefined = doc;
  for (const raw of ref.slice(2).split('/')) {
    const token = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (typeof node !== 'object' || node === null) return undefined;
    node = Array.isArray(node) ? node[Number(token)] : Object.hasOwn(node, token) ? node[token] : undefined;
  }
  return node;
}

/** Follows $refs until a non-reference object. */
function deref(v: Json | undefined, where: string): Obj {
  let node = obj(v, where);
  for (let hops = 0; typeof node.$ref === 'string'; hops++) {
    assert.ok(hops < 10, `${where}: $ref cycle`);
    node = obj(resolvePointer(node.$ref), `${where} -> ${node.$ref}`);
  }
  return node;
}

function operation(path: string, method: string): Obj {
  return obj(obj(obj(doc.paths, 'paths')[path], path)[method], `${method} ${path}`);
}

function responses(op: Obj, where: string): Record<string, Obj> {
  return Object.fromEntries(Object.entries(obj(op.responses, `${where}.responses`)).map(([s, r]) => [s, deref(r, `${where} ${s}`)]));
}

function headerNames(response: Obj): string[] {
  return Object.keys(response.headers === undefined ? {} : obj(response.headers, 'headers'));
}

function param(op: Obj, name: string): Obj {
  const found = arr(op.parameters ?? [], 'parameters').map((p) => deref(p, 'parameter')).find((p) => p.name === name);
  return obj(found, `parameter ${name}`);
}

/**
 * A JSON Schema subset check (the keywords the document uses), to compare real responses
 * with the document. Returns problems; an unknown keyword is itself a problem, so the
 * document cannot grow a constraint this check silently ignores.
 */
function conforms(schema: Json | undefined, value: unknown, path = '$'): string[] {
  const s = deref(schema, path);
  const problems: string[] = [];
  const known = new Set(['type', 'properties', 'required', 'items', 'enum', 'minimum', 'maximum', 'minLength', 'maxLength', 'pattern', 'format', 'default', 'description', 'examples', 'additionalProperties']);
  for (const k of Object.keys(s)) if (!known.has(k)) problems.push(`${path}: keyword ${k} is not checked here`);
  switch (s.type) {
    case 'object': {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) return [`${path}: not an object`];
      const record = value as Record<string, unknown>;
      for (const name of arr(s.required ?? [], 'required')) if (!Object.hasOwn(record, name as string)) problems.push(`${path}.${String(name)} is required`);
      const props = obj(s.properties ?? {}, 'properties');
      for (const [name, sub] of Object.entries(props)) {
        if (Object.hasOwn(record, name)) problems.push(...conforms(sub, record[name], `${path}.${name}`));
      }
      // additionalProperties: true (or absent) allows anything; a schema checks the others.
      if (typeof s.additionalProperties === 'object' && s.additionalProperties !== null) {
        for (const name of Object.keys(record)) {
          if (!Object.hasOwn(props, name)) problems.push(...conforms(s.additionalProperties, record[name], `${path}.${name}`));
        }
      }
      break;
    }
    case 'array':
      if (!Array.isArray(value)) return [`${path}: not an array`];
      value.forEach((item, i) => problems.push(...conforms(s.items, item, `${path}[${i}]`)));
      break;
    case 'integer':
      if (!Number.isInteger(value)) return [`${path}: not an integer`];
      if (typeof s.minimum === 'number' && (value as number) < s.minimum) problems.push(`${path}: below ${s.minimum}`);
      if (typeof s.maximum === 'number' && (value as number) > s.maximum) problems.push(`${path}: above ${s.maximum}`);
      break;
    case 'string':
      if (typeof value !== 'string') return [`${path}: not a string`];
      if (typeof s.minLength === 'number' && value.length < s.minLength) problems.push(`${path}: shorter than ${s.minLength}`);
      if (typeof s.maxLength === 'number' && value.length > s.maxLength) problems.push(`${path}: longer than ${s.maxLength}`);
      if (typeof s.pattern === 'string' && !new RegExp(s.pattern, 'u').test(value)) problems.push(`${path}: does not match ${s.pattern}`);
      break;
    default:
      problems.push(`${path}: type ${JSON.stringify(s.type)} is not checked here`);
  }
  if (Array.isArray(s.enum) && !s.enum.includes(value as Json)) problems.push(`${path}: ${JSON.stringify(value)} is not in the enum`);
  return problems;
}

describe('the document as served', () => {
  test('no key needed, JSON, limited like keyless requests', () => {
    assert.equal(res.status, 200, res.text);
    assert.equal(res.headers.get('content-type'), 'application/json; charset=utf-8');
    for (const h of RATE_HEADERS) assert.ok(res.headers.get(h), `${h} on the document's response`);
    assert.equal(res.headers.get('x-ratelimit-limit'), '1000', 'the anonymous budget of the config');
  });

  test('OpenAPI 3.1, version 1.1.0 (the package version); the serving instance first, then both servers from the config', () => {
    assert.equal(doc.openapi, '3.1.0');
    assert.equal(obj(doc.info, 'info').version, '1.1.0');
    assert.equal(typeof obj(doc.info, 'info').title, 'string');
    assert.deepEqual(arr(doc.servers, 'servers').map((s) => obj(s, 'server').url), [srv.url, PRODUCTION, STAGING]);
    assert.deepEqual(arr(doc.servers, 'servers').map((s) => obj(s, 'server').description), ['this instance', 'production', 'staging']);
  });

  test('the first server follows the Host the document was asked under', async () => {
    const port = new URL(srv.url).port;
    // fetch() does not let a caller set Host, node:http does.
    const other = await new Promise<string>((resolve, reject) => {
      get(`${srv.url}/openapi.json`, { headers: { host: `localhost:${port}` } }, (r) => {
        let text = '';
        r.setEncoding('utf8').on('data', (d: string) => { text += d; }).on('end', () => resolve(text));
      }).on('error', reject);
    });
    assert.equal(obj(arr((JSON.parse(other) as Obj).servers, 'servers')[0], 'server').url, `http://localhost:${port}/v1`);
    const again = await call(`${srv.url}/openapi.json`);
    assert.equal(obj(arr((again.json as Obj).servers, 'servers')[0], 'server').url, srv.url);
  });

  test('pretty-printed, with a contact and a description for every operation', () => {
    assert.ok(res.text.split('\n').length > 500, 'one line per member, so linters give useful positions');
    assert.equal(typeof obj(obj(doc.info, 'info').contact, 'contact').name, 'string');
    for (const [path, item] of Object.entries(obj(doc.paths, 'paths'))) {
      for (const [method, op] of Object.entries(obj(item, path))) {
        assert.ok(String(obj(op, method).description ?? '').length > 20, `${method} ${path} has a description`);
      }
    }
  });

  test('X-Request-Id: what the description says is what the service sends', () => {
    const header = deref(obj(obj(doc.components, 'components').headers, 'headers')['X-Request-Id'], 'X-Request-Id');
    assert.doesNotMatch(String(header.description), /UUID/);
    assert.match(String(header.description), /8 hex digits/);
    assert.match(res.headers.get('x-request-id') ?? '', /^[0-9a-f]{8}-[0-9a-z]+$/);
  });

  test('Error.code is the enum of the registry codes', () => {
    const error = obj(obj(obj(doc.components, 'components').schemas, 'schemas').Error, 'Error');
    const code = obj(obj(error.properties, 'Error.properties').code, 'code');
    assert.deepEqual(code.enum, Object.keys(ERROR_CODES));
  });

  test('every example conforms to its own schema; every parameter, body and response has one', () => {
    let count = 0;
    const seen = (schema: Json | undefined, value: Json | undefined, where: string): void => {
      assert.ok(value !== undefined, `${where} has an example`);
      assert.deepEqual(conforms(schema, value, where), [], `${where}: its example conforms`);
      count++;
    };
    for (const [name, schema] of Object.entries(obj(obj(doc.components, 'components').schemas, 'schemas'))) {
      for (const example of arr(obj(schema, name).examples ?? [], `${name}.examples`)) seen(schema, example, `schema ${name}`);
    }
    for (const [path, item] of Object.entries(obj(doc.paths, 'paths'))) {
      for (const [method, o] of Object.entries(obj(item, path))) {
        const op = obj(o, method);
        for (const p of arr(op.parameters ?? [], 'parameters')) seen(obj(p, 'p').schema, obj(p, 'p').example, `${method} ${path} ${String(obj(p, 'p').name)}`);
        if (op.requestBody !== undefined) {
          const media = obj(obj(obj(op.requestBody, 'requestBody').content, 'content')['application/json'], 'json');
          seen(media.schema, media.example, `${method} ${path} body`);
        }
        for (const [status, r] of Object.entries(responses(op, `${method} ${path}`))) {
          if (r.content === undefined) continue;
          const media = obj(obj(r.content, 'content')['application/json'], 'json');
          const examples = media.examples === undefined ? [media.example] : Object.values(obj(media.examples, 'examples')).map((e) => obj(e, 'example').value);
          assert.ok(examples.length > 0, `${method} ${path} ${status} has examples`);
          for (const example of examples) seen(media.schema, example, `${method} ${path} ${status}`);
        }
      }
    }
    assert.ok(count > 30, `${count} examples checked`);
  });

  test('bearer scheme required everywhere but on the document itself', () => {
    const schemes = obj(obj(doc.components, 'components').securitySchemes, 'securitySchemes');
    assert.deepEqual(schemes.bearerAuth && { type: obj(schemes.bearerAuth, 'bearerAuth').type, scheme: obj(schemes.bearerAuth, 'bearerAuth').scheme }, { type: 'http', scheme: 'bearer' });
    assert.deepEqual(doc.security, [{ bearerAuth: [] }]);
    // The document needs no key, and takes one (charged to it): the bearer scheme is optional.
    assert.deepEqual(operation('/openapi.json', 'get').security, [{}, { bearerAuth: [] }]);
    for (const [path, method] of [['/pets', 'get'], ['/pets', 'post'], ['/pets/{petId}', 'get'], ['/store/orders', 'get']] as const) {
      const op = operation(path, method);
      assert.equal(op.security, undefined, `${method} ${path} inherits the bearer requirement`);
      const r = responses(op, `${method} ${path}`);
      assert.ok(r['401'], `${method} ${path} documents 401`);
      assert.ok(headerNames(r['401']).includes('WWW-Authenticate'));
    }
  });

  test('the Error schema', () => {
    const error = obj(obj(obj(doc.components, 'components').schemas, 'schemas').Error, 'Error');
    assert.equal(error.type, 'object');
    assert.deepEqual(error.required, ['code', 'message', 'status']);
    const props = obj(error.properties, 'Error.properties');
    assert.deepEqual(Object.fromEntries(Object.entries(props).map(([k, v]) => [k, obj(v, k).type])), { code: 'string', message: 'string', status: 'integer' });
  });

  test('Pet, NewPet and PetStatus as the API defines them', () => {
    const schemas = obj(obj(doc.components, 'components').schemas, 'schemas');
    const pet = obj(schemas.Pet, 'Pet');
    const newPet = obj(schemas.NewPet, 'NewPet');
    assert.deepEqual(pet.required, ['id', 'name', 'categoryId']);
    assert.deepEqual(newPet.required, ['name', 'categoryId']);
    assert.equal(obj(newPet.properties, 'NewPet.properties').id, undefined, 'a client does not send id');
    for (const [name, s] of [['Pet', pet], ['NewPet', newPet]] as const) {
      const props = obj(s.properties, `${name}.properties`);
      assert.deepEqual(obj(props.categoryId, 'categoryId'), { ...obj(props.categoryId, 'categoryId'), type: 'integer', format: 'int64' });
      assert.equal(obj(props.name, 'name').type, 'string');
      assert.equal(obj(props.status, 'status').$ref, '#/components/schemas/PetStatus');
    }
    assert.deepEqual(obj(obj(pet.properties, 'Pet.properties').id, 'id').format, 'int64');
    assert.deepEqual(obj(schemas.PetStatus, 'PetStatus').enum, ['available', 'pending', 'sold']);
  });
});

describe('every operation', () => {
  test('listPets: limit, status, cursor; 200 array of Pet with a next link; 400, 401, 429, 503', () => {
    const op = operation('/pets', 'get');
    assert.equal(op.operationId, 'listPets');
    const limit = param(op, 'limit');
    assert.equal(limit.in, 'query');
    assert.equal(limit.required, false);
    assert.deepEqual({ ...obj(limit.schema, 'limit.schema'), description: undefined }, { type: 'integer', minimum: 1, maximum: 100, default: 20, examples: [20], description: undefined });
    assert.deepEqual(obj(param(op, 'status').schema, 'status.schema'), { $ref: '#/components/schemas/PetStatus' });
    assert.equal(param(op, 'cursor').in, 'query');
    const r = responses(op, 'listPets');
    assert.deepEqual(Object.keys(r).sort(), ['200', '400', '401', '429', '503', 'default']);
    const body = obj(obj(obj(r['200']?.content, 'content')['application/json'], 'json').schema, 'schema');
    assert.deepEqual(body, { type: 'array', items: { $ref: '#/components/schemas/Pet' } });
    assert.ok(headerNames(obj(r['200'], '200')).includes('Link'));
  });

  test('createPet: required NewPet body, optional Idempotency-Key header; 201 Pet with Location; 400, 401, 409, 413, 415, 422, 429, 501, 503, 507', () => {
    const op = operation('/pets', 'post');
    assert.equal(op.operationId, 'createPet');
    const body = obj(op.requestBody, 'requestBody');
    assert.equal(body.required, true);
    assert.deepEqual(obj(obj(body.content, 'content')['application/json'], 'json').schema, { $ref: '#/components/schemas/NewPet' });
    const r = responses(op, 'createPet');
    assert.deepEqual(Object.keys(r).sort(), ['201', '400', '401', '409', '413', '415', '422', '429', '501', '503', '507', 'default']);
    assert.deepEqual(obj(obj(r['201']?.content, 'content')['application/json'], 'json').schema, { $ref: '#/components/schemas/Pet' });
    assert.ok(headerNames(obj(r['201'], '201')).includes('Location'));
    assert.ok(headerNames(obj(r['201'], '201')).includes('Idempotent-Replayed'), 'a replay says so');
    const key = param(op, 'Idempotency-Key');
    assert.deepEqual({ in: key.in, required: key.required, type: obj(key.schema, 's').type }, { in: 'header', required: false, type: 'string' });
    // The draft asks servers to publish their expiry policy: the description does.
    assert.match(String(key.description), /Expiry policy: a key is remembered for 24 hours/);
    const examples = (status: string): string[] =>
      Object.keys(obj(obj(obj(r[status]?.content, 'content')['application/json'], 'json').examples, 'examples'));
    assert.deepEqual(examples('409'), ['idempotency_key_in_use']);
    assert.deepEqual(examples('422'), ['idempotency_key_reused']);
  });

  test('getPet: deprecated with its sunset date; petId path parameter; 200, 400, 401, 404, 429, 503', () => {
    const op = operation('/pets/{petId}', 'get');
    assert.equal(op.operationId, 'getPet');
    assert.equal(op.deprecated, true);
    assert.equal(op['x-sunset'], 'Thu, 05 Dec 2030 00:00:00 GMT');
    assert.match(String(op.description), /05 Dec 2030/);
    assert.match(String(op.description), /GET \/pets/, 'names the replacement');
    const petId = param(op, 'petId');
    assert.deepEqual({ in: petId.in, required: petId.required, type: obj(petId.schema, 's').type, format: obj(petId.schema, 's').format }, { in: 'path', required: true, type: 'integer', format: 'int64' });
    const r = responses(op, 'getPet');
    assert.deepEqual(Object.keys(r).sort(), ['200', '400', '401', '404', '429', '503', 'default']);
    for (const [status, response] of Object.entries(r)) {
      for (const h of ['Deprecation', 'Sunset', 'Link']) assert.ok(headerNames(response).includes(h), `getPet ${status} documents ${h}`);
    }
  });

  test('GET /store/orders: in the Store group, 501', () => {
    const op = operation('/store/orders', 'get');
    assert.deepEqual(op.tags, ['Store']);
    assert.deepEqual(Object.keys(responses(op, 'orders')).sort(), ['401', '429', '501', '503', 'default']);
    assert.ok(arr(doc.tags, 'tags').some((t) => obj(t, 'tag').name === 'Store'));
  });

  test('the document route itself: public, 200 and 429', () => {
    const op = operation('/openapi.json', 'get');
    assert.deepEqual(Object.keys(responses(op, 'openapi')).sort(), ['200', '429', '503', 'default']);
    const ok = obj(obj(obj(responses(op, 'openapi')['200']?.content, 'content')['application/json'], 'json').schema, 'schema');
    assert.deepEqual(ok, { $ref: '#/components/schemas/OpenApiDocument' }, 'typed, not a bare object');
    assert.deepEqual(conforms(ok, doc), [], 'the document conforms to its own schema');
  });

  test('the headers every answer carries, and Retry-After, are required; the others are not', () => {
    const headers = obj(obj(doc.components, 'components').headers, 'headers');
    for (const h of [...RATE_HEADERS, 'X-Request-Id', 'Retry-After']) assert.equal(obj(headers[h], h).required, true, `${h} is required`);
    for (const h of ['Location', 'Idempotent-Replayed', 'Link']) assert.notEqual(obj(headers[h], h).required, true, `${h} is not`);
  });

  test('every response of every operation documents the rate-limit headers; 429 also Retry-After', () => {
    for (const [path, item] of Object.entries(obj(doc.paths, 'paths'))) {
      for (const [method, op] of Object.entries(obj(item, path))) {
        assert.ok(responses(obj(op, method), `${method} ${path}`)['503'], `${method} ${path} lists 503 (outages and injected faults)`);
        for (const [status, response] of Object.entries(responses(obj(op, method), `${method} ${path}`))) {
          const names = headerNames(response);
          for (const h of RATE_HEADERS) assert.ok(names.includes(h), `${method} ${path} ${status} documents ${h}`);
          if (status === '429' || status === '503') assert.ok(names.includes('Retry-After'), `${method} ${path} ${status} documents Retry-After`);
          if (method === 'head') {
            assert.equal(response.content, undefined, `${method} ${path} ${status} has no body`);
          } else if (Number(status) >= 400) {
            assert.deepEqual(obj(obj(response.content, 'content')['application/json'], 'json').schema, { $ref: '#/components/schemas/Error' }, `${method} ${path} ${status} is an Error body`);
          }
        }
      }
    }
  });
});

describe('derived from the route table', () => {
  test('every route of ROUTES is in the document, with its parameters, body and statuses', () => {
    for (const route of ROUTES) {
      const op = operation(route.path, route.method.toLowerCase());
      assert.equal(op.operationId, route.operationId);
      assert.deepEqual(arr(op.parameters ?? [], 'parameters').map((p) => deref(p, 'p').name), route.parameters.map((p) => p.name));
      assert.equal(op.requestBody !== undefined, route.requestBody !== undefined, `${route.operationId} request body`);
      assert.equal(op.deprecated === true, route.deprecated !== undefined, `${route.operationId} deprecated`);
      const documented = Object.keys(responses(op, route.operationId));
      for (const status of Object.keys(route.responses)) assert.ok(documented.includes(status), `${route.operationId} documents ${status}`);
    }
  });

  test('nothing else: the operations are exactly ROUTES and the document route', () => {
    const ops: string[] = [];
    for (const [path, item] of Object.entries(obj(doc.paths, 'paths'))) {
      for (const method of Object.keys(obj(item, path))) ops.push(`${method.toUpperCase()} ${path}`);
    }
    // HEAD: the router answers it for every GET (RFC 9110 9.3.2), so the document has it too.
    const gets = [...ROUTES.filter((r) => r.method === 'GET').map((r) => r.path), '/openapi.json'];
    const expected = [...ROUTES.map((r) => `${r.method} ${r.path}`), 'GET /openapi.json', ...gets.map((p) => `HEAD ${p}`)];
    assert.deepEqual(ops.sort(), expected.sort());
  });
});

describe('structure, checked by hand (no third-party validator)', () => {
  /** Every {"$ref": ...} in the document, with where it is. */
  function refs(node: Json, where = '#'): Array<[string, string]> {
    if (typeof node !== 'object' || node === null) return [];
    if (Array.isArray(node)) return node.flatMap((v, i) => refs(v, `${where}/${i}`));
    return Object.entries(node).flatMap(([k, v]) => (k === '$ref' && typeof v === 'string' ? [[where, v] as [string, string]] : refs(v, `${where}/${k}`)));
  }

  test('every $ref resolves, and every component is used', () => {
    const all = refs(doc);
    assert.ok(all.length > 20, 'the document uses references');
    for (const [where, ref] of all) assert.notEqual(resolvePointer(ref), undefined, `${where}: ${ref} does not resolve`);
    const used = new Set(all.map(([, ref]) => ref));
    const components = obj(doc.components, 'components');
    for (const kind of ['schemas', 'headers']) {
      for (const name of Object.keys(obj(components[kind], kind))) assert.ok(used.has(`#/components/${kind}/${name}`), `components.${kind}.${name} is never used`);
    }
  });

  test('path templates and path parameters agree; paths are relative to a /v1 server', () => {
    for (const [path, item] of Object.entries(obj(doc.paths, 'paths'))) {
      assert.match(path, /^\/[^?#]*$/, `${path} starts with / and has no query`);
      assert.ok(!path.startsWith('/v1/'), `${path}: the servers already end in /v1`);
      const inTemplate = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
      for (const [method, op] of Object.entries(obj(item, path))) {
        assert.ok(METHODS.includes(method), `${path}: ${method} is not an HTTP method`);
        const params = arr(obj(op, method).parameters ?? [], 'parameters').map((p) => deref(p, 'parameter'));
        const declared = params.filter((p) => p.in === 'path').map((p) => p.name);
        assert.deepEqual(declared.sort(), [...inTemplate].sort(), `${method} ${path}: path parameters`);
        for (const p of params) {
          assert.ok(['query', 'path', 'header', 'cookie'].includes(String(p.in)), `${p.name}: in`);
          if (p.in === 'path') assert.equal(p.required, true, `${method} ${path}: path parameter ${String(p.name)} must be required`);
          assert.ok(p.schema !== undefined, `${method} ${path}: ${String(p.name)} has a schema`);
        }
        const keys = params.map((p) => `${String(p.in)}:${String(p.name)}`);
        assert.equal(new Set(keys).size, keys.length, `${method} ${path}: duplicate parameters`);
      }
    }
  });

  test('operationIds unique; every response has a description and a status code key', () => {
    const ids: string[] = [];
    for (const [path, item] of Object.entries(obj(doc.paths, 'paths'))) {
      for (const [method, op] of Object.entries(obj(item, path))) {
        const o = obj(op, method);
        assert.equal(typeof o.operationId, 'string');
        ids.push(o.operationId as string);
        for (const t of arr(o.tags ?? [], 'tags')) assert.ok(arr(doc.tags, 'tags').some((d) => obj(d, 'tag').name === t), `tag ${String(t)} is declared`);
        const rs = responses(o, `${method} ${path}`);
        assert.ok(Object.keys(rs).length > 0);
        assert.deepEqual(obj(obj(obj(rs.default, 'default').content ?? { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } }, 'content')['application/json'], 'json').schema,
          { $ref: '#/components/schemas/Error' }, `${method} ${path}: any other status a harness causes is an Error (default)`);
        for (const [status, r] of Object.entries(rs)) {
          assert.match(status, /^(?:[1-5][0-9][0-9]|default)$/);
          assert.equal(typeof r.description, 'string', `${method} ${path} ${status} description`);
          for (const h of Object.values(obj(r.headers ?? {}, 'headers'))) {
            const header = deref(h, 'header');
            assert.equal(typeof header.description, 'string');
            assert.ok(header.schema !== undefined, 'a header has a schema');
          }
        }
      }
    }
    assert.equal(new Set(ids).size, ids.length, `duplicate operationIds in ${ids.join(', ')}`);
  });

  test('the component schemas use only keywords this file can check', () => {
    for (const [name, schema] of Object.entries(obj(obj(doc.components, 'components').schemas, 'schemas'))) {
      assert.deepEqual(conforms(schema, sample(name)), [], `a sample ${name} conforms`);
    }
  });
});

function sample(name: string): unknown {
  switch (name) {
    case 'Pet': return { id: 1, name: 'Rex', categoryId: 2, status: 'sold' };
    case 'NewPet': return { name: 'Rex', categoryId: 2 };
    case 'PetStatus': return 'pending';
    case 'Error': return { code: 'not_found', message: 'x', status: 404 };
    case 'OpenApiDocument': return { openapi: '3.1.0', info: { title: 't', version: '1' }, paths: { '/x': {} } };
    default: return assert.fail(`no sample for schema ${name}`);
  }
}

describe('what the service answers is what the document says', () => {
  const key = KEYS.enterprise;

  async function check(path: string, method: string, r: Res): Promise<void> {
    const op = operation(path, method);
    const response = responses(op, `${method} ${path}`)[String(r.status)];
    assert.ok(response, `${method} ${path} answered ${r.status}, which is not documented: ${r.text}`);
    for (const h of headerNames(response)) {
      // The next link is there only when a next page exists; the replay header only on a replay.
      if (h === 'Link' && path === '/pets') continue;
      if (h === 'Idempotent-Replayed') continue;
      assert.ok(r.headers.get(h) !== null, `${method} ${path} ${r.status}: documented header ${h} is missing`);
    }
    const content = response.content === undefined ? undefined : obj(obj(response.content, 'content')['application/json'], 'json');
    if (content !== undefined) assert.deepEqual(conforms(content.schema, r.json), [], `${method} ${path} ${r.status} body ${r.text}`);
  }

  test('each operation, success and failure', async () => {
    const created = await post(`${srv.url}/pets`, key, { name: 'Doc', categoryId: 7, status: 'pending' });
    await check('/pets', 'post', created);
    await check('/pets', 'post', await post(`${srv.url}/pets`, key, { name: '' }));
    await check('/pets', 'post', await call(`${srv.url}/pets`, { method: 'POST', key, headers: { 'content-type': 'text/plain' }, body: 'x' }));
    await check('/pets', 'post', await post(`${srv.url}/pets`, 'wrong-key', { name: 'x', categoryId: 1 }));
    await post(`${srv.url}/pets`, key, { name: 'Doc2', categoryId: 7 });
    await check('/pets', 'get', await call(`${srv.url}/pets?limit=1`, { key }));
    await check('/pets', 'get', await call(`${srv.url}/pets?status=pending`, { key }));
    await check('/pets', 'get', await call(`${srv.url}/pets?limit=0`, { key }));
    await check('/pets', 'get', await call(`${srv.url}/pets`));
    const id = (created.json as { id: number }).id;
    await check('/pets/{petId}', 'get', await call(`${srv.url}/pets/${id}`, { key }));
    await check('/pets/{petId}', 'get', await call(`${srv.url}/pets/424242`, { key }));
    await check('/pets/{petId}', 'get', await call(`${srv.url}/pets/x1`, { key }));
    await check('/store/orders', 'get', await call(`${srv.url}/store/orders`, { key }));
    await check('/openapi.json', 'get', await call(`${srv.url}/openapi.json`));
    await check('/pets', 'head', await call(`${srv.url}/pets`, { method: 'HEAD', key }));
    await check('/pets/{petId}', 'head', await call(`${srv.url}/pets/${id}`, { method: 'HEAD', key }));
    await check('/pets/{petId}', 'head', await call(`${srv.url}/pets/424242`, { method: 'HEAD', key }));
    await check('/openapi.json', 'head', await call(`${srv.url}/openapi.json`, { method: 'HEAD' }));
  });

  test('a rate-limited answer is documented too', async () => {
    const dir = tempDir();
    const small = await startBundle(['--memory', '--config', writeConfig(dir, testConfig({ keys: [{ key: 'tiny-key', plan: 'tiny' }], plans: { tiny: { perMinute: 1, perDay: 10 } } }))], { cwd: dir });
    try {
      assert.equal((await call(`${small.url}/pets`, { key: 'tiny-key' })).status, 200);
      const limited = await call(`${small.url}/pets`, { key: 'tiny-key' });
      assert.equal(limited.status, 429);
      await check('/pets', 'get', limited);
    } finally {
      await small.stop();
    }
  });
});
