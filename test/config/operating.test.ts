// The operating fields of a config: metrics, admin, and unique key names (`keys revoke NAME`
// must pick exactly one key).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { parseConfig } from '../../src/config/index.js';
import { problems } from '../support/config-problems.js';

const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');


test('metrics and admin are off by default', () => {
  const c = parseConfig({}, 'x', '/srv');
  assert.equal(c.metrics, false);
  assert.equal(c.admin, undefined);
});

test('metrics: true or false only', () => {
  assert.equal(parseConfig({ metrics: true }, 'x', '/srv').metrics, true);
  assert.deepEqual(problems({ metrics: 'yes' }), ['metrics must be true or false, got "yes"']);
});

test('admin: a key or its digest, held as the digest, never a key of the API', () => {
  assert.deepEqual(parseConfig({ admin: { key: 'adm-1-0123456789ab' } }, 'x', '/srv').admin, { digest: sha256('adm-1-0123456789ab'), journal: 1000, namespaces: 0, preferFaults: false });
  assert.deepEqual(parseConfig({ admin: { sha256: sha256('adm-1').toUpperCase() } }, 'x', '/srv').admin, { digest: sha256('adm-1'), journal: 1000, namespaces: 0, preferFaults: false });
  assert.deepEqual(problems({ admin: 'adm-1' }), ['admin must be an object {"sha256": "<hex digest>"} or {"key": "<key>"}']);
  assert.deepEqual(problems({ admin: {} }), ['admin needs exactly one of "key" (the key in clear) or "sha256" (its hex SHA-256 digest)']);
  assert.deepEqual(problems({ admin: { sha256: 'abc' } }), ['admin.sha256 must be 64 hexadecimal characters']);
  assert.deepEqual(problems({ admin: { key: 'adm-1-0123456789ab', role: 'root' } }), ['admin.role is not a known field']);
  const clash = problems({ keys: [{ key: 'shared', plan: 'free', name: 'k' }], admin: { sha256: sha256('shared') } });
  assert.deepEqual(clash, ['admin is the same key as the API key named "k": the admin key must be a key of its own']);
  assert.ok(!clash.join().includes('shared'), 'the key is not echoed');
});

test('admin.journal: entries the request journal keeps, 0 (off) to 100,000, default 1,000', () => {
  const key = 'adm-1-0123456789ab';
  assert.equal(parseConfig({ admin: { key } }, 'x', '/srv').admin?.journal, 1000);
  assert.equal(parseConfig({ admin: { key, journal: 0 } }, 'x', '/srv').admin?.journal, 0);
  assert.equal(parseConfig({ admin: { key, journal: 100_000 } }, 'x', '/srv').admin?.journal, 100_000);
  for (const journal of [-1, 100_001, 1.5, '10', null]) {
    assert.deepEqual(problems({ admin: { key, journal } }), ['admin.journal must be an integer from 0 (no request journal) to 100000 (entries kept)'], String(journal));
  }
});

test('admin.namespaces: how many namespaces there may be at once, 0 (off) to 10,000, default 0', () => {
  const key = 'adm-1-0123456789ab';
  assert.equal(parseConfig({ admin: { key } }, 'x', '/srv').admin?.namespaces, 0);
  assert.equal(parseConfig({ admin: { key, namespaces: 10_000 } }, 'x', '/srv').admin?.namespaces, 10_000);
  for (const namespaces of [-1, 10_001, 2.5, '10', null]) {
    assert.deepEqual(problems({ admin: { key, namespaces } }), ['admin.namespaces must be an integer from 0 (no namespaces) to 10000'], String(namespaces));
  }
});

test('admin: a key in clear shorter than 16 characters is refused, without echoing it', () => {
  const short = problems({ admin: { key: 'adm-secret' } });
  assert.deepEqual(short, ['admin.key must be at least 16 characters long (it has 10); make one with: openssl rand -hex 16']);
  assert.ok(!short.join().includes('adm-secret'), 'the key is not echoed');
  assert.deepEqual(problems({ admin: { key: 'a' } }).length, 1);
  assert.deepEqual(parseConfig({ admin: { key: '0123456789abcdef' } }, 'x', '/srv').admin, { digest: sha256('0123456789abcdef'), journal: 1000, namespaces: 0, preferFaults: false });
  // A key that is no token at all gets the one message about that.
  assert.deepEqual(problems({ admin: { key: 'a b' } }), ['admin.key must be a non-empty string of token characters (A-Z a-z 0-9 - . _ ~ + /)']);
});

test('key names are unique (keys revoke NAME picks one), unnamed keys included', () => {
  assert.deepEqual(problems({ keys: [{ key: 'a', plan: 'free', name: 'x' }, { key: 'b', plan: 'free', name: 'x' }] }), [
    'keys[1].name "x" is already the name of keys[0]: names must be unique',
  ]);
  assert.deepEqual(problems({ keys: [{ key: 'a', plan: 'free' }, { key: 'b', plan: 'free', name: 'key #1' }] }), [
    'keys[1].name "key #1" is already the name of keys[0]: names must be unique',
  ]);
  assert.deepEqual(problems({ keys: [{ key: 'a', plan: 'free' }, { key: 'b', plan: 'free' }] }), []);
});
