// trustProxy as a number of proxies or as the proxies' addresses: which X-Forwarded-For hop is
// the client (table-driven), what the config accepts, and a keyless client charged by its own
// address behind two proxies (the bundle, black-box).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseConfig, type TrustProxy } from '../../src/config/index.js';
import { forwardedClient } from '../../src/http/client-address.js';
import { addressBytes, inRange, parseRange, readTrustProxy } from '../../src/config/proxies.js';
import { call, startBundle, tempDir, testConfig, writeConfig } from '../support/bundle.js';

function trust(v: unknown): TrustProxy {
  const problems: string[] = [];
  const t = readTrustProxy(v, (p) => problems.push(p));
  assert.deepEqual(problems, []);
  return t;
}

const cases: Array<{ name: string; trust: unknown; header: string | undefined; peer: string; want: string | undefined }> = [
  // true: today's meaning, the last hop.
  { name: 'true: the last hop', trust: true, header: '198.51.100.1, 203.0.113.7', peer: '10.0.0.2', want: '203.0.113.7' },
  { name: 'false: nothing believed', trust: false, header: '203.0.113.7', peer: '10.0.0.2', want: undefined },
  // N proxies: nginx appends the client, haproxy appends nginx.
  { name: '2: nginx then haproxy, the client is second from the end', trust: 2, header: '203.0.113.7, 10.0.0.1', peer: '10.0.0.2', want: '203.0.113.7' },
  { name: '2: a client-written hop in front is ignored', trust: 2, header: '6.6.6.6, 203.0.113.7, 10.0.0.1', peer: '10.0.0.2', want: '203.0.113.7' },
  { name: '2: fewer hops than proxies: the first', trust: 2, header: '203.0.113.7', peer: '10.0.0.2', want: '203.0.113.7' },
  { name: '3: the third from the end', trust: 3, header: '1.1.1.1, 203.0.113.7, 10.0.0.1, 10.0.0.3', peer: '10.0.0.2', want: '203.0.113.7' },
  { name: '2: the client hop not an address: the peer', trust: 2, header: 'junk, 10.0.0.1', peer: '10.0.0.2', want: undefined },
  { name: '1 is true', trust: 1, header: '198.51.100.1, 203.0.113.7', peer: '10.0.0.2', want: '203.0.113.7' },
  // The proxies by address: walk back while the hop is a proxy.
  { name: 'ranges: two proxies in 10/8, the client before them', trust: ['10.0.0.0/8'], header: '6.6.6.6, 203.0.113.7, 10.0.0.1', peer: '10.0.0.2', want: '203.0.113.7' },
  { name: 'ranges: the peer is not a proxy: nothing believed', trust: ['10.0.0.0/8'], header: '203.0.113.7', peer: '192.0.2.50', want: undefined },
  { name: 'ranges: the peer IPv4-mapped', trust: ['10.0.0.0/8'], header: '203.0.113.7', peer: '::ffff:10.9.9.9', want: '203.0.113.7' },
  { name: 'ranges: a single address', trust: ['192.0.2.7', '10.1.0.0/16'], header: '203.0.113.7, 10.1.2.3', peer: '192.0.2.7', want: '203.0.113.7' },
  { name: 'ranges: every hop a proxy: the first', trust: ['10.0.0.0/8'], header: '10.0.0.5, 10.0.0.1', peer: '10.0.0.2', want: '10.0.0.5' },
  { name: 'ranges: a junk hop stops the walk at the one after it', trust: ['10.0.0.0/8'], header: '203.0.113.7, junk, 10.0.0.1', peer: '10.0.0.2', want: '10.0.0.1' },
  { name: 'ranges: IPv6 proxies', trust: ['2001:db8:1::/48'], header: '2001:db8:ffff::9, 2001:db8:1::1', peer: '2001:db8:1::2', want: '2001:db8:ffff::9' },
  { name: 'ranges: an IPv6 range does not match IPv4', trust: ['::/0'], header: '203.0.113.7', peer: '10.0.0.2', want: undefined },
  { name: 'ranges: /0 trusts every IPv4 peer', trust: ['0.0.0.0/0'], header: '203.0.113.7', peer: '10.0.0.2', want: '203.0.113.7' },
  { name: 'ranges: a non-byte prefix', trust: ['10.0.0.0/12'], header: '203.0.113.7, 10.15.0.1', peer: '10.0.0.2', want: '203.0.113.7' },
  { name: 'ranges: just outside a non-byte prefix', trust: ['10.0.0.0/12'], header: '203.0.113.7, 10.16.0.1', peer: '10.0.0.2', want: '10.16.0.1' },
  { name: 'no header', trust: 2, header: undefined, peer: '10.0.0.2', want: undefined },
];
for (const tc of cases) {
  test(`forwardedClient: ${tc.name}`, () => assert.equal(forwardedClient(tc.header, tc.peer, trust(tc.trust)), tc.want));
}

test('addressBytes and inRange: IPv4, IPv6, IPv4-mapped, zone ids', () => {
  assert.deepEqual([...(addressBytes('10.1.2.3') ?? [])], [10, 1, 2, 3]);
  assert.deepEqual([...(addressBytes('::ffff:10.1.2.3') ?? [])], [10, 1, 2, 3]);
  assert.equal(addressBytes('fe80::1%eth0')?.length, 16);
  assert.equal(addressBytes('junk'), undefined);
  const range = parseRange('2001:db8::/32');
  assert.ok(typeof range !== 'string');
  assert.ok(inRange(addressBytes('2001:db8::1') as Uint8Array, range));
  assert.ok(!inRange(addressBytes('2001:db9::1') as Uint8Array, range));
});

const refused: Array<[unknown, RegExp]> = [
  ['yes', /trustProxy must be true or false, a number of proxies from 1 to 16, or a list.*got "yes"/],
  [0, /got 0/],
  [17, /got 17/],
  [1.5, /got 1\.5/],
  [[], /1 to 256 addresses or ranges; got 0/],
  [['10.0.0.0/33'], /trustProxy\[0\] has a prefix length that is not 0 to 32: "10\.0\.0\.0\/33"/],
  [['2001:db8::/129'], /not 0 to 128/],
  [['proxy.example.com'], /trustProxy\[0\] is not an IP address or a CIDR range: "proxy\.example\.com"/],
  [['10.0.0.1', 7], /trustProxy\[1\] is not a string: 7/],
  [['10.0.0.0/8x'], /prefix length/],
];
for (const [value, message] of refused) {
  test(`trustProxy ${JSON.stringify(value)} is refused, the value echoed`, () => {
    assert.throws(() => parseConfig({ trustProxy: value }, 'test.json', '/srv'), (err: Error & { problems?: string[] }) => message.test((err.problems ?? [err.message]).join('\n')));
  });
}

test('behind two proxies (trustProxy: 2), keyless clients are charged by their own address, not all to one', async () => {
  const dir = tempDir();
  const file = writeConfig(dir, testConfig({ anonymous: { perMinute: 2, perDay: 100 }, trustProxy: 2 }));
  const srv = await startBundle(['--memory', '--config', file], { cwd: dir });
  try {
    const statuses: number[] = [];
    // Three clients, two requests each (their whole budget), all through the same nginx (10.0.0.1).
    for (const client of ['203.0.113.1', '203.0.113.2', '203.0.113.3']) {
      for (let i = 0; i < 2; i++) statuses.push((await call(`${srv.url}/openapi.json`, { headers: { 'x-forwarded-for': `${client}, 10.0.0.1` } })).status);
    }
    assert.deepEqual(statuses, [200, 200, 200, 200, 200, 200]);
    // The third request of one of them is over its budget.
    assert.equal((await call(`${srv.url}/openapi.json`, { headers: { 'x-forwarded-for': '203.0.113.1, 10.0.0.1' } })).status, 429);
  } finally {
    assert.equal(await srv.stop(), 0);
  }
});
