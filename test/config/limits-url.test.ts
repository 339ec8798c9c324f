// The limits URL and the config field `limits`: a clear refusal of what is not a
// Redis URL, never echoing it (it may hold a password). --limits and PETSTORE_LIMITS, and their
// precedence, are tested on the bundle (test/bundle/redis-limits.test.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, limitsUrlProblem, parseConfig } from '../../src/config/index.js';
import { parseLimitsUrl } from '../../src/config/limits-url.js';

test('accepted limits URLs', () => {
  for (const url of ['redis://127.0.0.1:6379/0', 'redis://h', 'rediss://user:secret@cache.example.com:6380/2', 'redis://[::1]:6379', 'redis://:pw@h:1/']) {
    assert.equal(limitsUrlProblem(url), undefined, url);
  }
});

test('refused limits URLs say why, without echoing the URL', () => {
  const cases: Array<[string, RegExp]> = [
    ['not a url', /must be a URL such as redis:\/\/host:6379\/0/],
    ['http://h:6379', /redis:\/\/ or rediss:\/\/.*got http:\/\//],
    ['postgres://u:secret@h/db', /got postgres:\/\//],
    ['redis://u:secret@h:6379/zero', /database number/],
    ['redis://u:secret%zz@h:6379/0', /bad percent-encoding in its user name or password/],
    ['redis://u:secret@h:6379/0?tls=1', /no query or fragment/],
  ];
  for (const [url, why] of cases) {
    const problem = limitsUrlProblem(url) ?? '';
    assert.match(problem, why, url);
    assert.equal(problem.includes('secret'), false);
  }
});

test('parseLimitsUrl: decoded credentials, a bare IPv6 host, defaults', () => {
  assert.deepEqual(parseLimitsUrl('rediss://us%40er:p%25ss@[::1]:6380/3'), { host: '::1', port: 6380, username: 'us@er', password: 'p%ss', db: 3, tls: true });
  assert.deepEqual(parseLimitsUrl('redis://h'), { host: 'h', port: 6379, username: undefined, password: undefined, db: 0, tls: false });
});

test('config field "limits": kept when valid, refused (with the field named) when not', () => {
  assert.equal(parseConfig({}, 'x', '/srv').limits, undefined);
  assert.equal(parseConfig({ limits: 'redis://h:6379/0' }, 'x', '/srv').limits, 'redis://h:6379/0');
  for (const bad of ['ftp://h', '', 42]) {
    assert.throws(() => parseConfig({ limits: bad }, 'test.json', '/srv'), (err: unknown) => err instanceof ConfigError && err.problems.some((p) => p.startsWith('limits ')));
  }
});

test('TLS files, Sentinel and Cluster: parsed, refused with what to do', () => {
  assert.deepEqual(parseLimitsUrl('rediss://h:6380/1?ca=/etc/ca.crt&cert=/c.pem&key=/k.pem'), {
    host: 'h', port: 6380, username: undefined, password: undefined, db: 1, tls: true, ca: '/etc/ca.crt', cert: '/c.pem', key: '/k.pem',
  });
  assert.deepEqual(parseLimitsUrl('redis+sentinel://u:p%40ss@a:26379,[::1]:26380/mymaster/2?sentinelPassword=s'), {
    host: 'a', port: 26379, username: 'u', password: 'p@ss', db: 2, tls: false, sentinelPassword: 's',
    sentinels: [{ host: 'a', port: 26379 }, { host: '::1', port: 26380 }], masterName: 'mymaster',
  });
  const cases: Array<[string, RegExp]> = [
    ['redis://h/0?ca=/x', /no query or fragment.*rediss:\/\//],
    ['rediss://h/0?cert=/c', /cert and key together/],
    ['redis+sentinel://a:26379', /must name the master/],
    ['redis+cluster://a:7000', /Redis Cluster, which the limits do not support/],
  ];
  for (const [url, why] of cases) assert.match(limitsUrlProblem(url) ?? '', why, url);
});
