// Namespaces on the request path: one connection may be served by the root's app and by a
// namespace's, each rebuilding its routes when it meets a new config; what a connection
// remembers of its Authorization header must never outlive a reload in either of them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request, Agent } from 'node:http';
import type { Socket } from 'node:net';
import { startPetstore } from '../../src/server/index.js';
import { KEYS, testConfig } from '../support/bundle.js';

const ADMIN_KEY = 'admin-key-0123456789abcdef0123';

interface Answer { status: number; body: string; socket: Socket }
function get(port: number, path: string, key: string, agent: Agent): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ port, host: '127.0.0.1', path, headers: { authorization: `Bearer ${key}` }, agent }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, socket: req.socket as Socket }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

test('a key revoked by a reload fails in a namespace too, on a connection the root served after an earlier reload', async (t) => {
  const config = (extra: Record<string, unknown> = {}) => testConfig({ admin: { key: ADMIN_KEY, namespaces: 2 }, ...extra });
  const handle = await startPetstore({ port: 0, host: '127.0.0.1', config: config() });
  t.after(() => handle.close());
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  t.after(() => agent.destroy());

  const first = await get(handle.port, '/ns/a/v1/pets', KEYS.free, agent);
  assert.equal(first.status, 200, first.body);
  // A reload that keeps the key; the root meets it first, on this connection.
  await handle.reload(config({ anonymous: { perMinute: 999, perDay: 99999 } }));
  assert.equal((await get(handle.port, '/v1/pets', KEYS.free, agent)).status, 200);
  // Then the key is revoked; the namespace's app meets the new config on the same connection.
  const keys = (testConfig().keys as Array<{ key: string }>).filter((k) => k.key !== KEYS.free);
  await handle.reload(config({ keys }));
  const revoked = await get(handle.port, '/ns/a/v1/pets', KEYS.free, agent);
  assert.equal(revoked.socket, first.socket, 'the same connection');
  assert.equal(revoked.status, 401, revoked.body);
  assert.equal((await get(handle.port, '/v1/pets', KEYS.free, agent)).status, 401);
});

test("the access log line of a namespace's request has its path as sent, /ns/{name} included", async (t) => {
  // Both ways a line is made: fields for an embedder's function, JSON text for a logger that takes it.
  const fields: Array<Record<string, unknown> | undefined> = [];
  const json: string[] = [];
  const loggers = [
    (level: string, msg: string, f?: Record<string, unknown>) => {
      if (msg === 'request completed') fields.push(f);
    },
    { log() {}, enabled: () => true, logJson: (_level: string, msg: string, text: string) => msg === 'request completed' && json.push(text) },
  ] as const;
  for (const logger of loggers) {
    const handle = await startPetstore({ port: 0, host: '127.0.0.1', config: testConfig({ admin: { key: ADMIN_KEY, namespaces: 2 } }), logger });
    t.after(() => handle.close());
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    t.after(() => agent.destroy());
    assert.equal((await get(handle.port, '/ns/a/v1/pets?limit=1', KEYS.free, agent)).status, 200);
    assert.equal((await get(handle.port, '/v1/pets?limit=2', KEYS.free, agent)).status, 200);
  }
  const urls = fields.map((f) => (f?.req as { url?: string } | undefined)?.url);
  assert.deepEqual(urls, ['/ns/a/v1/pets?limit=1', '/v1/pets?limit=2']);
  assert.deepEqual(json.map((line) => (JSON.parse(`{${line.slice(1)}}`) as { req: { url: string } }).req.url), ['/ns/a/v1/pets?limit=1', '/v1/pets?limit=2']);
});
