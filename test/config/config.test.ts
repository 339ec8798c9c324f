import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { parseConfig } from '../../src/config/index.js';
import { problems } from '../support/config-problems.js';


test('defaults: the default plans, ban, anonymous budget, 64 KiB bodies', () => {
  const c = parseConfig({}, 'x', '/srv');
  assert.deepEqual(c.plans.get('free'), { perMinute: 60, perDay: 1000 });
  assert.deepEqual(c.plans.get('pro'), { perMinute: 300, perDay: 10000 });
  assert.deepEqual(c.plans.get('business'), { perMinute: 1000, perDay: 100000 });
  assert.deepEqual(c.ban, { after: 20, seconds: 300 });
  assert.deepEqual(c.anonymous, { perMinute: 30, perDay: 500 });
  assert.equal(c.maxBodyBytes, 65536);
  assert.equal(c.dataFile, undefined);
  assert.equal(c.port, 8080);
  assert.ok(Object.isFrozen(c));
});

test('connection bounds: 10,000 connections and 32 MiB of unfinished bodies by default, both configurable', () => {
  const c = parseConfig({}, 'x', '/srv');
  assert.equal(c.maxConnections, 10_000);
  assert.equal(c.maxPendingBodyBytes, 32 * 1024 * 1024);
  const d = parseConfig({ maxConnections: 50, maxPendingBodyBytes: 1024, maxBodyBytes: 1024 }, 'x', '/srv');
  assert.equal(d.maxConnections, 50);
  assert.equal(d.maxPendingBodyBytes, 1024);
  assert.equal(parseConfig({ maxBodyBytes: 32 * 1024 * 1024 }, 'x', '/srv').maxBodyBytes, 32 * 1024 * 1024, 'up to the default maxPendingBodyBytes');
});

test('environment URLs: absolute http(s) in ASCII, with ports, IPv6 hosts, paths, international names as xn--', () => {
  const environments = { production: 'https://api.xn--exmple-jc1c.com:8443/petstore/v1', staging: 'http://[::1]:8080/v1' };
  assert.deepEqual({ ...parseConfig({ environments }, 'x', '/srv').environments }, environments);
});

test('keys in clear and as digests; enterprise limits; names', () => {
  const digest = createHash('sha256').update('secret-ci').digest('hex');
  const c = parseConfig({
    dataFile: 'data/pets.json',
    keys: [
      { key: 'k1', plan: 'free' },
      { sha256: digest.toUpperCase(), plan: 'pro', name: 'ci' },
      { key: 'big', plan: 'enterprise', limits: { perMinute: 5000, perDay: 2000000 } },
      { key: 'custom-free', plan: 'free', limits: { perMinute: 2, perDay: 3 } },
    ],
  }, 'x', '/srv');
  assert.equal(c.dataFile, '/srv/data/pets.json');
  const byName = new Map([...c.keys.values()].map((k) => [k.name, k]));
  assert.equal(byName.get('key #1')?.plan, 'free');
  assert.equal(byName.get('ci')?.digest, digest);
  assert.deepEqual(byName.get('key #3')?.limits, { perMinute: 5000, perDay: 2000000 });
  assert.deepEqual(byName.get('key #4')?.limits, { perMinute: 2, perDay: 3 });
  for (const k of c.keys.values()) assert.equal(JSON.stringify(k).includes('"k1"'), false, 'no key in clear is kept');
});

const bad: Array<{ name: string; raw: unknown; expect: RegExp[] }> = [
  { name: 'not an object', raw: [], expect: [/JSON object/] },
  { name: 'unknown top-level field', raw: { colour: 1 }, expect: [/"colour"/] },
  { name: 'unknown plan', raw: { keys: [{ key: 'a', plan: 'gold' }] }, expect: [/"gold" is not a known plan/] },
  { name: 'unknown plan with limits', raw: { keys: [{ key: 'a', plan: 'gold', limits: { perMinute: 1, perDay: 1 } }] }, expect: [/"gold"/] },
  { name: 'duplicate keys', raw: { keys: [{ key: 'a', plan: 'free' }, { key: 'a', plan: 'pro' }] }, expect: [/duplicate/] },
  { name: 'duplicate via digest', raw: { keys: [{ key: 'a', plan: 'free' }, { sha256: createHash('sha256').update('a').digest('hex'), plan: 'pro' }] }, expect: [/duplicate/] },
  { name: 'enterprise without limits', raw: { keys: [{ key: 'a', plan: 'enterprise' }] }, expect: [/enterprise.*limits/] },
  { name: 'zero limit', raw: { plans: { free: { perMinute: 0, perDay: 1 } } }, expect: [/plans\.free\.perMinute must be a positive integer/] },
  { name: 'negative limit', raw: { plans: { free: { perMinute: 1, perDay: -1 } } }, expect: [/perDay/] },
  { name: 'fractional limit', raw: { anonymous: { perMinute: 1.5, perDay: 1 } }, expect: [/anonymous\.perMinute/] },
  { name: 'missing limit', raw: { plans: { free: { perMinute: 1 } } }, expect: [/perDay/] },
  { name: 'limit a string', raw: { plans: { free: { perMinute: '60', perDay: 1 } } }, expect: [/perMinute/] },
  { name: 'key and sha256', raw: { keys: [{ key: 'a', sha256: 'b', plan: 'free' }] }, expect: [/exactly one/] },
  { name: 'neither key nor sha256', raw: { keys: [{ plan: 'free' }] }, expect: [/exactly one/] },
  { name: 'bad digest', raw: { keys: [{ sha256: 'xyz', plan: 'free' }] }, expect: [/64 hexadecimal/] },
  { name: 'key with a space', raw: { keys: [{ key: 'a b', plan: 'free' }] }, expect: [/token characters/] },
  { name: 'keys not an array', raw: { keys: {} }, expect: [/keys must be an array/] },
  { name: 'unknown key field', raw: { keys: [{ key: 'a', plan: 'free', role: 'admin' }] }, expect: [/role/] },
  { name: 'port out of range', raw: { port: 70000 }, expect: [/port/] },
  { name: 'port a string', raw: { port: '80' }, expect: [/port/] },
  { name: 'ban wrong', raw: { ban: { after: 0, seconds: 'x' } }, expect: [/ban\.after/, /ban\.seconds/] },
  { name: 'environment unknown', raw: { environments: { dev: 'http://x/v1' } }, expect: [/environments\.dev/] },
  { name: 'environment URL without /v1', raw: { environments: { production: 'https://x' } }, expect: [/environments\.production/] },
  { name: 'environment URL outside ASCII', raw: { environments: { production: 'https://api.ex\u20acmple.com/v1' } }, expect: [/environments\.production must be an http\(s\) URL ending in \/v1, absolute and in ASCII/] },
  { name: 'environment URL with a space or <>', raw: { environments: { production: 'https://a b/v1', staging: 'https://x/<a>/v1' } }, expect: [/environments\.production/, /environments\.staging/] },
  { name: 'environment URL with no valid host', raw: { environments: { production: 'https://[zz]/v1', staging: 'http:///v1' } }, expect: [/environments\.production/, /environments\.staging/] },
  { name: 'maxConnections zero', raw: { maxConnections: 0 }, expect: [/maxConnections must be a positive integer/] },
  { name: 'maxPendingBodyBytes a string', raw: { maxPendingBodyBytes: '1mb' }, expect: [/maxPendingBodyBytes must be a positive integer/] },
  { name: 'maxPendingBodyBytes below maxBodyBytes', raw: { maxPendingBodyBytes: 1000 }, expect: [/maxPendingBodyBytes \(1000\) must be at least maxBodyBytes \(65536\)/] },
  // Without the check both ways, a body that could never be held got "503, retry in 1 s" forever.
  { name: 'maxBodyBytes above the default maxPendingBodyBytes', raw: { maxBodyBytes: 1e15 }, expect: [/the default maxPendingBodyBytes \(33554432\) must be at least maxBodyBytes \(1000000000000000\)/] },
  { name: 'maxBodyBytes above maxPendingBodyBytes', raw: { maxBodyBytes: 40_000_000, maxPendingBodyBytes: 39_999_999 }, expect: [/maxPendingBodyBytes \(39999999\) must be at least maxBodyBytes \(40000000\)/] },
  { name: 'cors origin with a path', raw: { cors: { origins: ['https://a.example/x'] } }, expect: [/cors\.origins\[0\]/] },
  { name: 'bad log level', raw: { logLevel: 'loud' }, expect: [/logLevel/] },
  { name: 'maxBodyBytes zero', raw: { maxBodyBytes: 0 }, expect: [/maxBodyBytes/] },
  { name: 'trustProxy a string', raw: { trustProxy: 'yes' }, expect: [/trustProxy/] },
  { name: 'several problems at once', raw: { colour: 1, port: -1, keys: [{ key: 'a', plan: 'nope' }] }, expect: [/colour/, /port/, /nope/] },
];
for (const tc of bad) {
  test(`refused: ${tc.name}`, () => {
    const found = problems(tc.raw);
    assert.ok(found.length >= tc.expect.length, `expected problems, got ${JSON.stringify(found)}`);
    for (const re of tc.expect) assert.ok(found.some((p) => re.test(p)), `${re} in ${JSON.stringify(found)}`);
  });
}

test('a key in clear never appears in a problem message', () => {
  const found = problems({ keys: [{ key: 'super-secret-1', plan: 'free' }, { key: 'super-secret-1', plan: 'free' }] });
  assert.ok(found.length > 0);
  assert.ok(found.every((p) => !p.includes('super-secret-1')));
});

test('the message names the source', () => {
  assert.throws(() => parseConfig({ colour: 1 }, '/etc/petstore.json', '/'), /\/etc\/petstore\.json/);
});

test('members given twice are found, with their paths', async () => {
  const { repeatedMembers } = await import('../../src/config/index.js');
  assert.deepEqual(repeatedMembers('{"a":1,"b":{"c":1,"c":2},"a":3}'), ['b.c', 'a']);
  assert.deepEqual(repeatedMembers('{"keys":[{"key":"x","plan":"free","plan":"pro"},{"key":"y"}],"s":"\\"keys\\""}'), ['keys[0].plan']);
  assert.deepEqual(repeatedMembers('{"a":[1,{"b":1}],"b":1}'), []);
});

test('idempotencyRetentionHours: 24 by default; a whole number of hours from 1 to a year, else refused', () => {
  assert.equal(parseConfig({}, 'x', '/srv').idempotencyRetentionHours, 24);
  assert.equal(parseConfig({ idempotencyRetentionHours: 1 }, 'x', '/srv').idempotencyRetentionHours, 1);
  assert.equal(parseConfig({ idempotencyRetentionHours: 8760 }, 'x', '/srv').idempotencyRetentionHours, 8760);
  for (const bad of [0, -1, 1.5, 8761, '24', null, true]) {
    assert.deepEqual(problems({ idempotencyRetentionHours: bad }), [
      `idempotencyRetentionHours must be an integer from 1 to 8760, got ${JSON.stringify(bad)}`,
    ], String(bad));
  }
});
