// The access log's fixed template: the same line as the generic serializer wrote, with only
// the strings a client controls escaped (by hand, as JSON.stringify would).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, createServer, request, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { createApp } from '../../src/http/app.js';
import { hundredths, jsonString } from '../../src/http/access-log.js';
import { systemClock } from '../../src/core/clock.js';
import { batchingSink, jsonLogger } from '../../src/core/log.js';
import type { Logger } from '../../src/core/index.js';
import { parseConfig } from '../../src/config/index.js';
import { ROUTES } from '../../src/api/routes.js';
import { openMemoryStore } from '../../src/store/index.js';
import { MemoryLimiter } from '../../src/limits/index.js';
import { testConfig } from '../support/bundle.js';

test('jsonString writes every string exactly as JSON.stringify does', () => {
  const samples = [
    '', 'plain', 'curl/8.5.0', 'quote"inside', 'back\\slash', 'tab\there', 'nl\nx', '\r\b\f\u0000\u001f\u007f',
    'caf\u00e9 \u20ac', '\ud83d\ude00 pair', 'lone \ud800 high', 'lone \udc00 low', 'end high \ud83d', '\udc00\ud800', '"\\"',
  ];
  // And random strings over the characters that matter.
  const alphabet = ['a', '"', '\\', '\n', '\u0001', '\u001f', ' ', '\u00ff', '\ud800', '\udbff', '\udc00', '\udfff', '\u2028', 'z'];
  let seed = 7;
  for (let n = 0; n < 2000; n++) {
    let s = '';
    const len = n % 12;
    for (let i = 0; i < len; i++) {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      s += alphabet[seed % alphabet.length];
    }
    samples.push(s);
  }
  for (const s of samples) assert.equal(jsonString(s), JSON.stringify(s), JSON.stringify(s));
});

/** An app on the memory store with `config` and `logger`, listening on a free port. */
async function serve(config: ReturnType<typeof parseConfig>, logger: Logger): Promise<{ server: Server; port: number }> {
  const app = createApp({
    store: openMemoryStore(), clock: systemClock, logger,
    keyLimiter: new MemoryLimiter({ clock: systemClock, ban: config.ban }),
    addressLimiter: new MemoryLimiter({ clock: systemClock, ban: config.ban }),
    config: () => config, publicBase: undefined, routes: ROUTES,
  });
  const server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port };
}

/** Serves one app with `logger` and sends the same odd request to it; the fields logged. */
async function logged(logger: Logger, lines: () => Array<Record<string, unknown>>): Promise<Record<string, unknown>> {
  const { server, port } = await serve(parseConfig(testConfig(), 'test', process.cwd()), logger);
  try {
    await new Promise<void>((resolve, reject) => {
      const req = request({
        port, host: '127.0.0.1', path: '/v1/pe\\ts?x=%22{}|^', method: 'GET',
        headers: { 'user-agent': 'agent "quoted" \\ \u00e9', 'x-request-id': 'fixed-id' },
      }, (res) => {
        res.resume();
        res.on('end', resolve);
      });
      req.on('error', reject);
      req.end();
    });
    for (let i = 0; i < 100 && lines().length === 0; i++) await new Promise((r) => setTimeout(r, 10));
  } finally {
    server.close();
  }
  const line = lines().find((l) => l.msg === 'request completed');
  assert.ok(line, 'an access line');
  return line;
}

test('the template line holds the same fields as the generic one, errors and odd characters included', async () => {
  const text: string[] = [];
  const fast = await logged(jsonLogger('info', (l) => text.push(l)), () => text.map((l) => JSON.parse(l) as Record<string, unknown>));
  const objects: Array<Record<string, unknown>> = [];
  const generic = await logged(
    { log: (_level, msg, fields) => objects.push(JSON.parse(JSON.stringify({ ...fields, msg })) as Record<string, unknown>) },
    () => objects,
  );
  assert.equal(text.length, 1);
  assert.match(text[0] as string, /^\{"level":30,"time":\d+,"pid":\d+,"hostname":".*","reqId":"fixed-id","req":\{"method":"GET","url":/);
  for (const l of [fast, generic]) {
    assert.equal(typeof l.responseTime, 'number');
    l.responseTime = 0;
    assert.equal(typeof (l.req as { remotePort: unknown }).remotePort, 'number');
    (l.req as { remotePort: unknown }).remotePort = 0;
  }
  const { level, time, pid, hostname, ...rest } = fast;
  assert.deepEqual([level, typeof time, pid, typeof hostname], [30, 'number', process.pid, 'string']);
  assert.deepEqual(rest, generic);
  assert.deepEqual(Object.keys(rest), Object.keys(generic), 'in the same order');
  assert.equal((rest.err as { code: string }).code, 'unauthorized');
  assert.equal((rest.req as { headers: Record<string, string> }).headers['user-agent'], 'agent "quoted" \\ \u00e9');
});

test('responseTime in hundredths is written as JSON.stringify writes the rounded number', () => {
  for (let h = 0; h < 200_000; h++) assert.equal(hundredths(h), String(h / 100), String(h));
  for (const h of [999_999_999, 123_456_789_012, 1e15 - 1, 1e15, 1e20, 12.5, -3, NaN, Infinity]) {
    assert.equal(hundredths(h), String(h / 100), String(h));
  }
  for (let i = 0; i < 10_000; i++) {
    const elapsed = Math.random() * 10 ** (i % 7);
    assert.equal(hundredths(Math.round(elapsed * 100)), String(Math.round(elapsed * 100) / 100));
  }
});

test('the address fields: once per connection, but per request when taken from X-Forwarded-For', async () => {
  const text: string[] = [];
  const config = parseConfig(testConfig({ trustProxy: true, keys: [
    { key: 'k-one-0123456789abcdef', plan: 'free', name: 'one "quoted"' },
    { key: 'k-two-0123456789abcdef', plan: 'free', name: 'two' },
  ] }), 'test', process.cwd());
  const { server, port } = await serve(config, jsonLogger('info', (l) => text.push(l)));
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const send = (headers: Record<string, string>): Promise<void> => new Promise((resolve, reject) => {
      const req = request({ port, host: '127.0.0.1', path: '/v1/pets', agent, headers }, (res) => {
        res.resume();
        res.on('end', resolve);
      });
      req.on('error', reject);
      req.end();
    });
    await send({ 'x-forwarded-for': '203.0.113.7', authorization: 'Bearer k-one-0123456789abcdef' });
    await send({ 'x-forwarded-for': '198.51.100.9, 10.0.0.1', authorization: 'Bearer k-two-0123456789abcdef' });
    await send({ authorization: 'Bearer k-one-0123456789abcdef' });
    await send({ 'x-forwarded-for': 'not an address', authorization: 'Bearer k-one-0123456789abcdef' });
    for (let i = 0; i < 100 && text.length < 4; i++) await new Promise((r) => setTimeout(r, 10));
  } finally {
    agent.destroy();
    server.close();
  }
  const lines = text.map((l) => JSON.parse(l) as { req: { remoteAddress: string; remotePort: number }; key: string });
  assert.equal(lines.length, 4);
  assert.deepEqual(lines.map((l) => l.req.remoteAddress), ['203.0.113.7', '10.0.0.1', '127.0.0.1', '127.0.0.1']);
  assert.deepEqual(lines.map((l) => l.key), ['one "quoted"', 'two', 'one "quoted"', 'one "quoted"']);
  assert.equal(new Set(lines.map((l) => l.req.remotePort)).size, 1, 'one connection');
});

test('through the output buffer, every line is what the logger wrote, in UTF-8: non-ASCII user agent and key name, and ASCII lines after them', async () => {
  const text: string[] = [];
  const bytes: Buffer[] = [];
  const out = batchingSink((b) => bytes.push(Buffer.from(b)));
  out.release();
  const config = parseConfig(testConfig({ keys: [
    { key: 'k-one-0123456789abcdef', plan: 'free', name: 'cl\u00e9 \u20ac' },
    { key: 'k-two-0123456789abcdef', plan: 'free', name: 'two' },
  ] }), 'test', process.cwd());
  const { server, port } = await serve(config, jsonLogger('info', (line, ascii) => { text.push(line); out.sink(line, ascii); }));
  try {
    // Raw bytes: a user agent in UTF-8, as a client sends it (node reads it as Latin-1, and the
    // line writes each of those characters in UTF-8, as JSON.stringify and the stream did).
    // A URL cannot carry such bytes: node's parser refuses them before any handler runs.
    const ask = (path: string, key: string, agent = 'plain'): Buffer => Buffer.concat([
      Buffer.from(`GET ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nUser-Agent: `),
      Buffer.from(agent, 'utf8'), Buffer.from('\r\n\r\n'),
    ]);
    const socket = connect(port, '127.0.0.1');
    socket.resume();
    socket.write(Buffer.concat([
      ask('/v1/pets', 'k-one-0123456789abcdef'),
      ask('/v1/pets/caf%C3%A9', 'k-two-0123456789abcdef', 'agent \u00e9\u20ac \ud83d\ude00'),
      ask('/v1/pets?name=%C3%A9', 'k-two-0123456789abcdef', 'caf\u00e9'),
      ask('/v1/pets', 'k-two-0123456789abcdef'),
      ask('/v1/pets', 'k-one-0123456789abcdef'),
      ask('/v1/pets?limit=1', 'k-two-0123456789abcdef'),
    ]));
    for (let i = 0; i < 200 && text.length < 6; i++) await new Promise((r) => setTimeout(r, 10));
    socket.destroy();
  } finally {
    server.close();
  }
  out.flush();
  assert.equal(text.length, 6, text.join(''));
  assert.equal(Buffer.concat(bytes).toString('utf8'), text.join(''));
  assert.equal(Buffer.concat(bytes).length, Buffer.byteLength(text.join('')));
  const lines = text.map((l) => JSON.parse(l) as { req: { url: string; headers?: Record<string, string> }; key: string });
  assert.deepEqual(lines.map((l) => l.key), ['cl\u00e9 \u20ac', 'two', 'two', 'two', 'cl\u00e9 \u20ac', 'two']);
  assert.equal(lines[1]?.req.headers?.['user-agent'], Buffer.from('agent \u00e9\u20ac \ud83d\ude00', 'utf8').toString('latin1'));
  assert.equal(lines[2]?.req.headers?.['user-agent'], 'caf\u00c3\u00a9');
});
