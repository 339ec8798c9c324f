// X-Forwarded-For with trustProxy: only a valid IP address counts; anything else is the
// socket's peer (unit cases for the parser, then the limiter's view from outside the bundle).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forwardedAddress } from '../../src/http/client-address.js';
import { call, startBundle, tempDir, testConfig, writeConfig } from '../support/bundle.js';

const cases: Array<{ name: string; header: string | string[] | undefined; want: string | undefined }> = [
  { name: 'absent', header: undefined, want: undefined },
  { name: 'empty', header: '', want: undefined },
  { name: 'one IPv4 hop', header: '203.0.113.7', want: '203.0.113.7' },
  { name: 'the last hop of several', header: '198.51.100.1, 10.0.0.1,203.0.113.7', want: '203.0.113.7' },
  { name: 'spaces around the last hop', header: 'x, \t203.0.113.7 ', want: '203.0.113.7' },
  { name: 'IPv6', header: '2001:db8::1', want: '2001:db8::1' },
  { name: 'IPv6 in capitals is lower-cased', header: '2001:DB8::A', want: '2001:db8::a' },
  { name: 'IPv4-mapped IPv6 in capitals', header: '::FFFF:203.0.113.7', want: '::ffff:203.0.113.7' },
  { name: 'an IPv6 zone id is dropped', header: `fe80::1%${'z'.repeat(1000)}`, want: 'fe80::1' },
  { name: 'text', header: 'unknown', want: undefined },
  { name: 'a 16 KiB hop', header: 'a'.repeat(16 * 1024), want: undefined },
  { name: 'a valid first hop and a junk last one', header: '203.0.113.7, junk', want: undefined },
  { name: 'a trailing comma', header: '203.0.113.7,', want: undefined },
  { name: 'IPv4 with a port', header: '203.0.113.7:8080', want: undefined },
  { name: 'bracketed IPv6', header: '[2001:db8::1]', want: undefined },
  { name: 'bracketed IPv6 with a port', header: '[2001:db8::1]:443', want: undefined },
  { name: 'leading zeros', header: '203.000.113.007', want: undefined },
  { name: 'an IPv4 zone id', header: '203.0.113.7%eth0', want: undefined },
  { name: 'out of range', header: '256.0.0.1', want: undefined },
  { name: 'a hostname', header: 'proxy.example.com', want: undefined },
  { name: 'an array (never from node:http)', header: ['203.0.113.7'], want: undefined },
];
for (const tc of cases) {
  test(`forwardedAddress: ${tc.name}`, () => assert.equal(forwardedAddress(tc.header), tc.want));
}

test('trustProxy: a last hop that is not an IP address is charged to the socket peer, not given a budget of its own', async () => {
  const dir = tempDir();
  const config = testConfig({ anonymous: { perMinute: 3, perDay: 1000 }, ban: { after: 1000, seconds: 60 }, trustProxy: true });
  const srv = await startBundle(['--memory', '--config', writeConfig(dir, config)], { cwd: dir });
  try {
    const status = async (hop: string): Promise<number> => (await call(`${srv.url}/pets`, { headers: { 'x-forwarded-for': hop } })).status;
    // Each junk value used to be a fresh table key with a fresh budget; now they all are 127.0.0.1.
    const junk: number[] = [];
    for (let i = 0; i < 5; i++) junk.push(await status(i === 4 ? `${'j'.repeat(16_000)}${i}` : `junk-${i}`));
    assert.deepEqual(junk, [401, 401, 401, 429, 429]);
    assert.equal(await status('127.0.0.1'), 429, 'the same budget as the peer itself');
    // A real address still has its own budget, whatever its spelling.
    assert.deepEqual([await status('203.0.113.7'), await status('::FFFF:203.0.113.7'), await status('::ffff:203.0.113.7'), await status('203.0.113.7')],
      [401, 401, 401, 429]);
    // IPv6 spellings of one /64 share one budget.
    const v6 = ['2001:DB8:0:1::1', '2001:db8:0:1:ffff::2', '2001:0db8:0000:0001:0:0:0:3', '2001:db8:0:1:1:2:3:4', '2001:db8::1:4'];
    const v6Statuses: number[] = [];
    for (const hop of v6) v6Statuses.push(await status(hop));
    assert.deepEqual(v6Statuses, [401, 401, 401, 429, 401], 'the last one is in 2001:db8:0:0::/64');
  } finally {
    await srv.stop();
  }
});
