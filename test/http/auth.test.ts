import { test } from 'node:test';
import assert from 'node:assert/strict';
import { authenticate, challenge } from '../../src/http/auth.js';
import { keyDigest, parseConfig } from '../../src/config/index.js';

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

test('a key is looked up only by its digest: a near miss and a far one compare the same fixed-length text', () => {
  // What keeps the lookup's time independent of how much of a wrong key matches: the secret is
  // never compared, only its SHA-256 (test/bundle/abuse.test.ts measures the same end to end,
  // where loopback noise is far larger than any comparison of the key itself could be).
  const looked: string[] = [];
  const keys = new Map(config.keys);
  const get = keys.get.bind(keys);
  keys.get = (k: string) => {
    looked.push(k);
    return get(k);
  };
  for (const token of ['good-kez', 'xxxxxxxx', 'good-key']) authenticate(`Bearer ${token}`, keys);
  assert.deepEqual(looked, [keyDigest('good-kez'), keyDigest('xxxxxxxx'), keyDigest('good-key')]);
  for (const k of looked) assert.match(k, /^[0-9a-f]{64}$/);
  assert.ok(config.keys.has(keyDigest('good-key')), 'the config holds the same digest of the key');
});
