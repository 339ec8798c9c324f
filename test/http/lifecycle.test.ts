// The request lifecycle as data: which phases each route gets under a config (a feature that
// is off adds none), the per-connection memory of the Authorization header and its reset on
// every config change, the connection ends a reply may ask for, and the pet byte cache.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, request, Agent, type Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { createApp, type AppDeps } from '../../src/http/app.js';
import { phaseTable } from '../../src/http/lifecycle.js';
import { authenticateOn } from '../../src/http/auth.js';
import { ManualClock } from '../../src/core/clock.js';
import { silentLogger } from '../../src/core/log.js';
import { keyDigest, parseConfig, type Config } from '../../src/config/index.js';
import { Faults, RequestJournal, type AdminControl } from '../../src/admin/index.js';
import { ServiceMetrics } from '../../src/metrics/index.js';
import { ROUTES, openApiRoute, type RouteSpec } from '../../src/api/index.js';
import { openMemoryStore, type LocalPetStore } from '../../src/store/index.js';
import { MemoryLimiter } from '../../src/limits/index.js';
import { startPetstore } from '../../src/server/start.js';
import { KEYS, testConfig } from '../support/bundle.js';

const ADMIN_KEY = 'admin-key-0123456789abcdef0123';

function depsFor(config: () => Config, routes: readonly RouteSpec[] = ROUTES, store: LocalPetStore = openMemoryStore()): AppDeps {
  const clock = new ManualClock();
  const admin: AdminControl = {
    reset: () => store.reset(), seed: (pets) => store.seed(pets), faults: new Faults(),
    journal: { query: () => Promise.resolve({ records: [], dropped: 0 }), count: () => Promise.resolve(0), wait: () => Promise.resolve({ count: 0, met: false, waitedMs: 0 }), clear: () => Promise.resolve() },
    clock: { now: () => clock.now(), offsetMs: 0, advance: (ms) => Promise.resolve(clock.advance(ms)) },
    snapshots: 'not in this test',
  };
  return {
    store, clock, logger: silentLogger, admin,
    keyLimiter: new MemoryLimiter({ clock, ban: config().ban }),
    addressLimiter: new MemoryLimiter({ clock, ban: config().ban }),
    config, publicBase: undefined, routes,
  };
}

function appFor(config: () => Config, routes: readonly RouteSpec[] = ROUTES, store: LocalPetStore = openMemoryStore()) {
  return createApp(depsFor(config, routes, store));
}

async function serve(t: { after(fn: () => unknown): void }, listener: ReturnType<typeof createApp>): Promise<{ server: Server; port: number }> {
  const server = createServer(listener);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  return { server, port: (server.address() as AddressInfo).port };
}

interface Answer { status: number; body: string; socket: Socket }
function get(port: number, path: string, headers: Record<string, string>, agent: Agent | false = false, method = 'GET'): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ port, host: '127.0.0.1', path, method, headers, agent }, (res) => {
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

test('each route gets only the phases its declaration and the config call for', () => {
  const plain = parseConfig(testConfig(), 'test', '/srv');
  const full = parseConfig(testConfig({ admin: { key: ADMIN_KEY }, cors: { origins: ['*'] } }), 'test', '/srv');
  const routes = [...ROUTES, openApiRoute(ROUTES, 'test')];
  const names = (config: Config) => Object.fromEntries(phaseTable(depsFor(() => config, routes), config).map((r) => [`${r.method} ${r.path}`, r.phases.join(' ')]));
  const off = names(plain);
  assert.equal(off['GET /v1/pets'], 'authenticate charge deny expect handler');
  assert.equal(off['GET /v1/pets/{petId}'], 'deprecation authenticate charge deny expect handler');
  assert.equal(off['POST /v1/pets'], 'authenticate charge deny expect idempotency body handler');
  assert.equal(off['GET /v1/openapi.json'], 'authenticate charge expect handler');
  assert.equal(off['GET /healthz'], 'handler');
  assert.equal(off['GET /metrics'], undefined, 'no /metrics with metrics off');
  assert.equal(off['POST /__admin/reset'], undefined, 'no /__admin without an admin key');
  assert.equal(off['* (any other path)'], 'authenticate charge deny expect handler');
  assert.equal(off['(other) /v1/pets'], 'authenticate charge deny expect handler');
  assert.equal(off['(other) /healthz'], 'handler');

  const on = names(full);
  assert.equal(on['GET /v1/pets'], 'journal cors authenticate charge deny expect faults handler');
  assert.equal(on['POST /v1/pets'], 'journal cors authenticate charge deny expect faults idempotency body handler');
  assert.equal(on['(other) /v1/pets'], 'journal cors authenticate charge deny expect handler');
  assert.equal(on['* (any other path)'], 'journal cors authenticate charge deny expect handler');
  assert.equal(on['GET /healthz'], 'handler');
  assert.equal(on['POST /__admin/reset'], 'authenticate charge deny handler');
  assert.equal(on['POST /__admin/seed'], 'authenticate charge deny body handler');
  assert.equal(on['* /__admin/(any other)'], 'authenticate charge deny handler');
  assert.equal(on['GET /__admin/requests'], 'authenticate charge deny handler', 'admin requests are not recorded');

  const noJournal = names(parseConfig(testConfig({ admin: { key: ADMIN_KEY, journal: 0 } }), 'test', '/srv'));
  assert.equal(noJournal['GET /v1/pets'], 'authenticate charge deny expect faults handler', 'journal 0: no journal phase');
});

test('after the handler, each route gets only the steps its answers can need', (t) => {
  const plain = parseConfig(testConfig(), 'test', '/srv');
  const full = parseConfig(testConfig({ admin: { key: ADMIN_KEY }, metrics: true }), 'test', '/srv');
  const routes = [...ROUTES, openApiRoute(ROUTES, 'test')];
  const logging = { log() {}, enabled: () => true };
  const names = (config: Config, deps: Partial<AppDeps> = {}) =>
    Object.fromEntries(phaseTable({ ...depsFor(() => config, routes), ...deps }, config).map((r) => [`${r.method} ${r.path}`, r.outbound.join(', ')]));
  // Silent: no access log; no metrics, no admin key: no journal, no connection fault.
  const off = names(plain);
  assert.equal(off['GET /v1/pets'], 'rate limit, gathered, request id, content');
  assert.equal(off['GET /v1/pets/{petId}'], 'deprecation, rate limit, gathered, request id, content', 'the deprecation fields only on the deprecated route');
  assert.equal(off['GET /healthz'], 'gathered, request id, content', 'an uncharged route has no rate-limit step');
  assert.equal(off['* (any other path)'], 'rate limit, gathered, request id, content');

  const metrics = new ServiceMetrics({ operations: routes.map((r) => r.operationId), version: 'test' });
  t.after(() => metrics.close());
  const on = names(full, { logger: logging, metrics, journal: new RequestJournal(4) });
  assert.equal(on['GET /v1/pets'], 'rate limit, gathered, request id, content, connection fault, journal, metrics, access log');
  assert.equal(on['POST /v1/pets'], 'rate limit, gathered, request id, content, connection fault, journal, metrics, access log');
  assert.equal(on['(other) /v1/pets'], 'rate limit, gathered, request id, content, journal, metrics, access log', 'no fault catches a 405');
  assert.equal(on['GET /metrics'], 'gathered, request id, content', 'the scrape is neither counted nor logged');
  assert.equal(on['POST /__admin/reset'], 'rate limit, gathered, request id, content, metrics, access log', 'admin requests are not recorded');
});

test('the Authorization header is resolved once per connection and config generation', () => {
  const config = parseConfig(testConfig(), 'test', '/srv');
  const looked: string[] = [];
  const keys = new Map(config.keys);
  const get = keys.get.bind(keys);
  keys.get = (k: string) => {
    looked.push(k);
    return get(k);
  };
  const a = {} as Socket;
  const b = {} as Socket;
  const header = `Bearer ${KEYS.free}`;
  assert.equal(authenticateOn(a, header, 1, keys).result.kind, 'key');
  assert.equal(authenticateOn(a, header, 1, keys).result.kind, 'key');
  assert.equal(looked.length, 1, 'the same value on the same connection: remembered');
  assert.equal(authenticateOn(b, header, 1, keys).result.kind, 'key');
  assert.equal(looked.length, 2, 'another connection resolves it itself');
  assert.equal(authenticateOn(a, 'Bearer wrong-key', 1, keys).result.kind, 'invalid');
  assert.equal(authenticateOn(a, 'Bearer wrong-key', 1, keys).result.kind, 'invalid');
  assert.equal(looked.length, 3, 'a wrong key is remembered exactly as a right one');
  assert.equal(authenticateOn(a, header, 1, keys).result.kind, 'key');
  assert.equal(authenticateOn(a, header, 2, keys).result.kind, 'key');
  assert.deepEqual(looked.slice(3), [keyDigest(KEYS.free), keyDigest(KEYS.free)], 'a new value, then a new generation: resolved again');
});

test('a key revoked by a reload fails on its very next request, on the connection that used it', async (t) => {
  const handle = await startPetstore({ port: 0, host: '127.0.0.1', config: testConfig({ admin: { key: ADMIN_KEY } }) });
  t.after(() => handle.close());
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  t.after(() => agent.destroy());
  const key = { authorization: `Bearer ${KEYS.free}` };
  const first = await get(handle.port, '/v1/pets', key, agent);
  assert.equal(first.status, 200);
  const admin = { authorization: `Bearer ${ADMIN_KEY}` };
  assert.equal((await get(handle.port, '/__admin/faults', admin, agent, 'DELETE')).status, 204);

  const keys = (testConfig().keys as Array<{ key: string }>).filter((k) => k.key !== KEYS.free);
  await handle.reload(testConfig({ keys, admin: { key: `${ADMIN_KEY}-new` } }));
  const revoked = await get(handle.port, '/v1/pets', key, agent);
  assert.equal(revoked.socket, first.socket, 'the same connection');
  assert.equal(revoked.status, 401, revoked.body);
  assert.equal((await get(handle.port, '/__admin/faults', admin, agent, 'DELETE')).status, 401, 'the old admin key too');
  assert.equal((await get(handle.port, '/v1/pets', { authorization: `Bearer ${KEYS.pro}` }, agent)).status, 200);
});

test('a reply can end its connection: reset, empty, or truncated after the headers', async (t) => {
  const config = parseConfig(testConfig(), 'test', '/srv');
  const route = (path: string, end: 'reset' | 'empty' | 'truncated'): RouteSpec => ({
    operationId: path.slice(1), method: 'GET', path, summary: '', tags: [], auth: 'key', parameters: [], responses: {},
    handler: () => ({ status: 200, body: '{"a":"0123456789"}', end }),
  });
  const { port } = await serve(t, appFor(() => config, [route('/reset', 'reset'), route('/empty', 'empty'), route('/truncated', 'truncated')]));
  const key = { authorization: `Bearer ${KEYS.free}` };
  await assert.rejects(get(port, '/v1/reset', key), (err: NodeJS.ErrnoException) => err.code === 'ECONNRESET');
  await assert.rejects(get(port, '/v1/empty', key), (err: NodeJS.ErrnoException) => err.code === 'ECONNRESET' && /socket hang up/.test(err.message));
  const raw = await new Promise<string>((resolve, reject) => {
    const s = connect(port, '127.0.0.1');
    let got = '';
    s.setEncoding('latin1');
    s.on('data', (c: string) => (got += c));
    s.on('close', () => resolve(got));
    s.on('error', reject);
    s.write(`GET /v1/truncated HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${KEYS.free}\r\n\r\n`);
  });
  assert.match(raw, /^HTTP\/1\.1 200 OK\r\n/);
  assert.match(raw, /content-length: 18\r\n/i);
  assert.ok(raw.endsWith('\r\n\r\n{"a":"012'), JSON.stringify(raw));
  // The server goes on.
  assert.equal((await get(port, '/healthz', {})).status, 200);
});

test('a pet is answered from its cached bytes until a reset, which drops them', async (t) => {
  const config = parseConfig(testConfig(), 'test', '/srv');
  const store = openMemoryStore();
  const { port } = await serve(t, appFor(() => config, ROUTES, store));
  const key = { authorization: `Bearer ${KEYS.free}` };
  await store.create({ name: 'first', categoryId: 1 });
  const a = await get(port, '/v1/pets/1', key);
  const b = await get(port, '/v1/pets/1', key);
  assert.deepEqual([a.status, JSON.parse(a.body).name, b.body], [200, 'first', a.body]);
  await store.reset();
  assert.equal((await get(port, '/v1/pets/1', key)).status, 404, 'a reset drops the cached pet');
  await store.create({ name: 'second', categoryId: 1 });
  assert.equal(JSON.parse((await get(port, '/v1/pets/1', key)).body).name, 'second');
  await store.reset();
  await store.seed([{ id: 1, name: 'seeded', categoryId: 2 }]);
  assert.equal(JSON.parse((await get(port, '/v1/pets/1', key)).body).name, 'seeded');
  // A list hit from the raw query string: the same page, and a reset drops it too.
  const page1 = await get(port, '/v1/pets?limit=5', key);
  assert.equal(JSON.parse(page1.body)[0].name, 'seeded');
  await store.reset();
  assert.equal((await get(port, '/v1/pets?limit=5', key)).body, '[]');
  assert.equal((await get(port, '/v1/pets?limit=5&limit=6', key)).status, 400, 'a bad query is never cached');
});

test('each fact once per request: one clock reading (limiter included), one config snapshot', async (t) => {
  const config = parseConfig(testConfig(), 'test', '/srv');
  const manual = new ManualClock();
  let reads = 0;
  let configs = 0;
  const clock = {
    now: () => { reads++; return manual.now(); },
    monotonic: () => { reads++; return manual.monotonic(); },
  };
  const store = openMemoryStore();
  await store.create({ name: 'a', categoryId: 1 });
  const listener = createApp({
    store, clock, logger: silentLogger,
    keyLimiter: new MemoryLimiter({ clock, ban: config.ban }),
    addressLimiter: new MemoryLimiter({ clock, ban: config.ban }),
    config: () => { configs++; return config; }, publicBase: undefined, routes: ROUTES,
  });
  const { port } = await serve(t, listener);
  const key = { authorization: `Bearer ${KEYS.free}` };
  for (const [path, headers] of [['/v1/pets/1', key], ['/v1/pets?limit=1', key], ['/v1/pets', {}]] as const) {
    reads = 0;
    configs = 0;
    const answer = await get(port, path, headers);
    assert.ok(answer.status === 200 || answer.status === 401, answer.body);
    // The monotonic clock once on arrival (the limiter charges at that reading); the wall
    // clock once, for X-RateLimit-Reset. With metrics and access log off, nothing at the end.
    assert.equal(reads, 2, `${path}: clock reads`);
    assert.equal(configs, 1, `${path}: config snapshots`);
  }
});
