// Behind a trusted proxy the links carry the scheme and host the client used: Forwarded
// (RFC 7239, its last element) first, then X-Forwarded-Proto/-Host; unit cases for the
// parser, then the links of the built bundle.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { lastForwardedElement, proxiedOrigin } from '../../src/http/forwarded.js';
import { KEYS, call, post, startBundle, tempDir, testConfig, writeConfig } from '../support/bundle.js';

const elements: Array<[string, string, Record<string, string> | undefined]> = [
  ['one element', 'for=192.0.2.60;proto=https;by=203.0.113.43', { for: '192.0.2.60', proto: 'https', by: '203.0.113.43' }],
  ['the last of several', 'proto=http;host=evil.example, for=192.0.2.1;proto=https;host=api.example.org', { for: '192.0.2.1', proto: 'https', host: 'api.example.org' }],
  ['names are case-insensitive', 'Proto=HTTPS;Host=a.example', { proto: 'HTTPS', host: 'a.example' }],
  ['quoted values, with a comma inside', 'for="a,b";proto=http, for="[2001:db8::1]:4711";host="api.example.org:8443"', { for: '[2001:db8::1]:4711', host: 'api.example.org:8443' }],
  ['spaces around pairs', ' for=1.2.3.4 ; proto=https ', { for: '1.2.3.4', proto: 'https' }],
  ['an unquoted host with a port (lenient)', 'host=api.example.org:8443;proto=https', { host: 'api.example.org:8443', proto: 'https' }],
  ['a name given twice', 'proto=http;proto=https', undefined],
  ['an unclosed quote', 'proto="https', undefined],
  ['junk', 'not a forwarded header', undefined],
  ['empty', '', undefined],
  ['a pair without a name', '=https', undefined],
  ['a value with a space', 'host=a b', undefined],
];

for (const [name, header, want] of elements) {
  test(`Forwarded: ${name}`, () => {
    const got = lastForwardedElement(header);
    assert.deepEqual(got === undefined ? undefined : Object.fromEntries(got), want);
  });
}

const req = (headers: Record<string, string>): IncomingMessage => ({ headers }) as unknown as IncomingMessage;

test('proxiedOrigin: Forwarded first, X-Forwarded-* for what it leaves out, nothing unusable', () => {
  assert.deepEqual(proxiedOrigin(req({ forwarded: 'proto=https;host=a.example' })), { proto: 'https', host: 'a.example' });
  assert.deepEqual(proxiedOrigin(req({ forwarded: 'proto=https', 'x-forwarded-proto': 'http', 'x-forwarded-host': 'b.example' })), { proto: 'https', host: 'b.example' });
  assert.deepEqual(proxiedOrigin(req({ 'x-forwarded-proto': 'http, https' })), { proto: 'https', host: undefined }, 'the last value');
  assert.deepEqual(proxiedOrigin(req({ 'x-forwarded-proto': 'https, http' })), { proto: 'http', host: undefined });
  assert.equal(proxiedOrigin(req({ 'x-forwarded-proto': 'gopher' })), undefined);
  assert.equal(proxiedOrigin(req({ 'x-forwarded-host': 'a b/c' })), undefined, 'not a host');
  assert.equal(proxiedOrigin(req({ forwarded: 'proto=ftp;host="<script>"' })), undefined);
  assert.equal(proxiedOrigin(req({})), undefined);
});

test('links follow the proxy with trustProxy, and ignore it without', async () => {
  const dir = tempDir();
  for (const trustProxy of [true, false]) {
    const srv = await startBundle(['--memory', '--config', writeConfig(dir, testConfig({ trustProxy }))], { cwd: dir });
    try {
      const port = new URL(srv.url).port;
      const direct = `http://127.0.0.1:${port}/v1`;
      const expect = (proxied: string): string => (trustProxy ? proxied : direct);
      const viaForwarded = { forwarded: 'for=192.0.2.1;proto=http;host=evil.example, for=198.51.100.2;proto=https;host=api.example.org' };
      const created = await call(`${srv.url}/pets`, {
        method: 'POST', key: KEYS.free, headers: { 'content-type': 'application/json', ...viaForwarded }, body: JSON.stringify({ name: 'a', categoryId: 1 }),
      });
      assert.equal(created.status, 201);
      assert.equal(created.headers.get('location'), `${expect('https://api.example.org/v1')}/pets/1`);
      await post(`${srv.url}/pets`, KEYS.free, { name: 'b', categoryId: 1 });
      // X-Forwarded-Proto alone: the scheme from the proxy, the host from Host.
      const page = await call(`${srv.url}/pets?limit=1`, { key: KEYS.free, headers: { 'x-forwarded-proto': 'https' } });
      assert.equal(page.headers.get('link'), `<${expect(`https://127.0.0.1:${port}/v1`)}/pets?limit=1&cursor=1>; rel="next"`);
      const old = await call(`${srv.url}/pets/1`, { key: KEYS.free, headers: { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'api.example.org' } });
      assert.equal(old.headers.get('link'), `<${expect('https://api.example.org/v1')}/pets>; rel="successor-version"`);
      const doc = await call(`${srv.url}/openapi.json`, { headers: viaForwarded });
      assert.equal((doc.json as { servers: Array<{ url: string }> }).servers[0]?.url, expect('https://api.example.org/v1'));
      // Nothing usable from the proxy: the Host header, as without one.
      const junk = await call(`${srv.url}/pets/1`, { key: KEYS.free, headers: { forwarded: 'proto=gopher', 'x-forwarded-host': '<x>' } });
      assert.equal(junk.headers.get('link'), `<${direct}/pets>; rel="successor-version"`);
    } finally {
      await srv.stop();
    }
  }
});
