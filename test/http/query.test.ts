import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseQuery } from '../../src/http/query.js';
import { single } from '../../src/api/schemas.js';
import { ApiError } from '../../src/core/errors.js';

test('parses pairs, + as space, percent-encoding, empty values', () => {
  const q = parseQuery('a=1&b=hello+world&c=%41%42&d&e=');
  assert.deepEqual([...q.entries()], [['a', ['1']], ['b', ['hello world']], ['c', ['AB']], ['d', ['']], ['e', ['']]]);
});

test('repeated parameters are kept and refused by single()', () => {
  const q = parseQuery('limit=1&limit=2');
  const refused = single(q, 'limit');
  assert.ok(refused instanceof ApiError && refused.status === 400 && /limit/.test(refused.message));
  assert.equal(single(q, 'other'), undefined);
});

test('malformed percent-encoding is a 400', () => {
  assert.throws(() => parseQuery('a=%zz'), (e: unknown) => e instanceof ApiError && e.code === 'invalid_request');
});

test('__proto__, constructor and inherited names are just names', () => {
  const before = Object.getOwnPropertyNames(Object.prototype);
  const q = parseQuery('__proto__=1&constructor=2&__proto__.polluted=3&toString=4');
  // Each would be lost or turned into something else by a parser that kept a plain object.
  assert.equal(single(q, '__proto__'), '1');
  assert.equal(single(q, 'constructor'), '2');
  assert.equal(single(q, '__proto__.polluted'), '3');
  assert.equal(single(q, 'toString'), '4');
  assert.equal(single(q, 'hasOwnProperty'), undefined, 'a name not sent is absent, inherited or not');
  assert.deepEqual(Object.getOwnPropertyNames(Object.prototype), before, 'Object.prototype is untouched');
});
