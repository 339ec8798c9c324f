import { test } from 'node:test';
import assert from 'node:assert/strict';
import { authenticate, challenge } from '../src/http/auth.js';
import { parseConfig } from '../src/config/index.js';

const config = parseConfig({ keys: [{ key: 'good-key', plan: 'free', name: 'g' }] }, 'x', '/');

const cases: Array<[string | undefined, string]> = [
  [undefined, 'missing'], ['', 'missing'], ['Bearer good-key', 'key'], ['bearer good-key', 'key'], ['BEARER good-key', 'key'],
  ['Bearer  good-key', 'key'], ['Bearer good-key ', 'key'], ['Bearer good-kez', 'invalid'], ['Bearer', 'invalid'], ['Bearer ', 'invalid'],
  ['Basic good-key', 'other_scheme'], ['Bearergood-key', 'other_scheme'], ['Token good-key', 'other_scheme'], ['good-key', 'other_scheme'],
  ['Basic dXNlcjpwYXNz', 'other_scheme'], ['bearer', 'invalid'],
];
for (const [header, kind] of cases) {
  test(`${JSON.stringify(header)} -> ${kind}`, () => {
    const r = authenticate(header, config.keys);
    assert.equal(r.kind, kind);
    if (r.kind === 'key') assert.equal(r.entry.name, 'g');
  });
}

test('challenges per RFC 6750', () => {
  assert.equal(challenge({ kind: 'missing' }), 'Bearer realm="petstore"');
  assert.match(challenge({ kind: 'invalid' }), /^Bearer realm="petstore", error="invalid_token"/);
  assert.equal(challenge({ kind: 'other_scheme' }), 'Bearer realm="petstore"');
});
