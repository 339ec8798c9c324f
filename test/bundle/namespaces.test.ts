// Namespaces against the built bundle: /ns/{name} in front of /v1 or /__admin is a world of
// its own (pets and ids, limits and bans, idempotency keys, clock, journal, faults,
// snapshots), made on first use and bounded; clients in several namespaces at once, and in the
// root, never see or change each other's state; every URL written inside keeps the prefix.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { KEYS, call, post, startBundle, tempDir, testConfig, writeConfig, type Res, type Running } from '../support/bundle.js';

const ADMIN_KEY = 'admin-key-for-namespaces-0123';
const TINY = 'tiny-key-0123';
const BAN = { after: 2, seconds: 600 };

function config(namespaces: number | undefined): Record<string, unknown> {
  const base = testConfig();
  return {
    ...base,
    plans: { ...(base.plans as object), tiny: { perMinute: 3, perDay: 1000 } },
    keys: [...(base.keys as object[]), { key: TINY, plan: 'tiny', name: 'tiny-test' }],
    ban: BAN,
    admin: namespaces === undefined ? { key: ADMIN_KEY } : { key: ADMIN_KEY, namespaces },
  };
}

async function withService(namespaces: number | undefined, fn: (srv: Running, root: string) => Promise<void>, args: string[] = []): Promise<void> {
  const dir = tempDir();
  const srv = await startBundle(['--config', writeConfig(dir, config(namespaces)), ...args], { cwd: dir });
  try {
    await fn(srv, srv.url.replace(/\/v1$/, ''));
  } finally {
    await srv.stop();
  }
}

/** The base of one namespace ('' is the root): `${root}/ns/{name}`. */
function at(root: string, ns: string): string {
  return ns === '' ? root : `${root}/ns/${ns}`;
}

function admin(base: string, method: string, path: string, body?: unknown): Promise<Res> {
  return call(`${base}/__admin${path}`, {
    method,
    key: ADMIN_KEY,
    ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  });
}

function ids(res: Res): number[] {
  assert.equal(res.status, 200, res.text);
  return (res.json as Array<{ id: number }>).map((p) => p.id);
}

function codeOf(res: Res): string | undefined {
  return (res.json as { code?: string } | undefined)?.code;
}

describe('namespaces off', () => {
  test('without admin.namespaces, /ns/... is a plain 404 (after the key, as any unknown path)', async () => {
    await withService(undefined, async (_srv, root) => {
      const res = await call(`${root}/ns/a/v1/pets`, { key: KEYS.free });
      assert.equal(res.status, 404, res.text);
      assert.equal(codeOf(res), 'not_found');
      assert.equal((await call(`${root}/ns/a/v1/pets`)).status, 401, 'no key: the 401 of any path');
      assert.equal((await call(`${root}/ns/a/__admin/requests`, { key: KEYS.free })).status, 404);
      const listed = await admin(root, 'GET', '/namespaces');
      assert.equal(listed.status, 404, listed.text);
      assert.match((listed.json as { message: string }).message, /admin\.namespaces/);
    });
  });
});

describe('namespaces on', () => {
  test('several namespaces and the root at once: pets, ids, idempotency keys, limits and bans, clock, faults, snapshots and journals never leak', async () => {
    await withService(3, async (_srv, root) => {
      const worlds = ['', 'alpha', 'beta', 'gamma.test-1'];
      // Each world, concurrently: 12 creates (ids 1..12), a replayed Idempotency-Key, its own list.
      const made = await Promise.all(worlds.map(async (ns) => {
        const base = `${at(root, ns)}/v1`;
        const created = await Promise.all(Array.from({ length: 12 }, (_, i) => post(`${base}/pets`, KEYS.enterprise, { name: `${ns || 'root'}-${i}`, categoryId: i })));
        for (const c of created) assert.equal(c.status, 201, c.text);
        const keyed = { name: `${ns || 'root'}-keyed`, categoryId: 99 };
        const headers = { 'content-type': 'application/json', 'idempotency-key': 'same-key-everywhere' };
        const first = await call(`${base}/pets`, { method: 'POST', key: KEYS.enterprise, headers, body: JSON.stringify(keyed) });
        const again = await call(`${base}/pets`, { method: 'POST', key: KEYS.enterprise, headers, body: JSON.stringify(keyed) });
        assert.equal(first.status, 201, first.text);
        assert.equal(again.status, 201, again.text);
        assert.equal(again.headers.get('idempotent-replayed'), 'true', `${ns}: the key replays in its own world`);
        assert.equal(first.headers.get('location'), `${base}/pets/13`, `${ns}: Location keeps the prefix`);
        return { ns, created };
      }));
      for (const { ns, created } of made) {
        const listed = ids(await call(`${at(root, ns)}/v1/pets?limit=100`, { key: KEYS.enterprise }));
        assert.deepEqual(listed, Array.from({ length: 13 }, (_, i) => i + 1), `${ns}: its own 13 pets, ids from 1`);
        const names = ((await call(`${at(root, ns)}/v1/pets?limit=100`, { key: KEYS.enterprise })).json as Array<{ name: string }>).map((p) => p.name);
        assert.ok(names.every((n) => n.startsWith(`${ns || 'root'}-`)), `${ns}: no other world's pets (${names.join(',')})`);
        assert.equal(created.length, 12);
      }

      // Limits and bans: the tiny key (3 a minute, banned after 2 refusals) banned in alpha only.
      const alphaCodes: string[] = [];
      for (let i = 0; i < 8; i++) {
        const r = await call(`${at(root, 'alpha')}/v1/pets`, { key: TINY });
        alphaCodes.push(r.status === 200 ? '200' : String(codeOf(r)));
      }
      assert.equal(alphaCodes.at(-1), 'temporarily_banned', alphaCodes.join(' '));
      const elsewhere = await Promise.all(['', 'beta', 'gamma.test-1'].map((ns) => call(`${at(root, ns)}/v1/pets`, { key: TINY })));
      for (const r of elsewhere) {
        assert.equal(r.status, 200, r.text);
        assert.equal(r.headers.get('x-ratelimit-remaining'), '2', 'a full bucket: the first request in this world');
      }

      // The clock: beta moves an hour; the others stay at real time.
      const moved = await admin(at(root, 'beta'), 'POST', '/clock', { advanceMs: 3_600_000 });
      assert.equal(moved.status, 200, moved.text);
      for (const ns of ['', 'alpha', 'gamma.test-1']) {
        assert.equal(((await admin(at(root, ns), 'GET', '/clock')).json as { offsetMs: number }).offsetMs, 0, `${ns}: clock untouched`);
      }
      assert.equal(((await admin(at(root, 'beta'), 'GET', '/clock')).json as { offsetMs: number }).offsetMs, 3_600_000);

      // Faults with a probability in gamma: only gamma's requests fail, some of them.
      const armed = await admin(at(root, 'gamma.test-1'), 'POST', '/faults', { operation: '*', status: 503, probability: 0.5, seed: 7 });
      assert.equal(armed.status, 200, armed.text);
      const statuses = await Promise.all(worlds.map(async (ns) => {
        const got: number[] = [];
        for (let i = 0; i < 20; i++) got.push((await call(`${at(root, ns)}/v1/pets/1`, { key: KEYS.enterprise })).status);
        return got;
      }));
      const [rootGot, alphaGot, betaGot, gammaGot] = statuses as [number[], number[], number[], number[]];
      for (const got of [rootGot, alphaGot, betaGot]) assert.ok(got.every((s) => s === 200), got.join(' '));
      assert.ok(gammaGot.includes(503) && gammaGot.includes(200), gammaGot.join(' '));
      assert.deepEqual(((await admin(root, 'GET', '/faults')).json as { faults: unknown[] }).faults, [], 'the root has no faults');

      // Snapshots: alpha's is alpha's alone, and restores alpha only.
      assert.equal((await admin(at(root, 'alpha'), 'PUT', '/snapshots/s1')).status, 201);
      for (const ns of ['', 'beta']) {
        assert.deepEqual(((await admin(at(root, ns), 'GET', '/snapshots')).json as { snapshots: unknown[] }).snapshots, [], `${ns}: no snapshots`);
      }
      assert.equal((await post(`${at(root, 'alpha')}/v1/pets`, KEYS.enterprise, { name: 'alpha-late', categoryId: 1 })).status, 201);
      assert.equal((await admin(at(root, 'alpha'), 'POST', '/snapshots/s1/restore')).status, 204);
      assert.equal(ids(await call(`${at(root, 'alpha')}/v1/pets?limit=100`, { key: KEYS.enterprise })).length, 13, 'alpha back to its snapshot');
      assert.equal(ids(await call(`${root}/v1/pets?limit=100`, { key: KEYS.enterprise })).length, 13, 'the root untouched');

      // Journals: each world's requests only (the tiny key: 8 in alpha, 1 elsewhere), paths as inside the world.
      for (const [ns, count] of [['', 1], ['alpha', 8], ['beta', 1], ['gamma.test-1', 1]] as const) {
        const res = await admin(at(root, ns), 'GET', '/requests?key=tiny-test&limit=1000');
        assert.equal(res.status, 200, res.text);
        const entries = (res.json as { requests: Array<{ path: string }> }).requests;
        assert.equal(entries.length, count, `${ns}: its own requests only`);
        assert.ok(entries.every((e) => e.path === '/v1/pets'), JSON.stringify(entries.map((e) => e.path)));
      }

      // The listing, the bound, a bad name, drop, and resets that reach one world only.
      const listed = await admin(root, 'GET', '/namespaces');
      assert.equal(listed.status, 200, listed.text);
      assert.deepEqual((listed.json as { namespaces: Array<{ name: string; pets: number }> }).namespaces.map((n) => [n.name, n.pets]),
        [['alpha', 13], ['beta', 13], ['gamma.test-1', 13]]);
      const fourth = await call(`${at(root, 'delta')}/v1/pets`, { key: KEYS.enterprise });
      assert.equal(fourth.status, 409, fourth.text);
      assert.equal(codeOf(fourth), 'conflict');
      assert.match(fourth.text, /admin\.namespaces allows \(3\)/);
      const bad = await call(`${root}/ns/bad!name/v1/pets`, { key: KEYS.enterprise });
      assert.equal(bad.status, 400, bad.text);
      assert.match(bad.text, /bad!name/);
      assert.equal((await admin(root, 'DELETE', '/namespaces/gamma.test-1')).status, 204);
      assert.equal((await admin(root, 'DELETE', '/namespaces/gamma.test-1')).status, 404);
      assert.deepEqual(ids(await call(`${at(root, 'delta')}/v1/pets`, { key: KEYS.enterprise })), [], 'a slot freed: delta is made, empty');
      assert.equal((await admin(`${root}/ns/delta`, 'GET', '/namespaces')).status, 404, 'a namespace lists no namespaces');
      assert.equal((await admin(root, 'DELETE', '/namespaces/delta')).status, 204);
      assert.deepEqual(ids(await call(`${at(root, 'gamma.test-1')}/v1/pets`, { key: KEYS.enterprise })), [], 'a dropped name comes back empty');

      assert.equal((await admin(root, 'POST', '/reset')).status, 204);
      assert.deepEqual(ids(await call(`${root}/v1/pets`, { key: KEYS.enterprise })), [], 'the root reset');
      assert.equal(ids(await call(`${at(root, 'alpha')}/v1/pets?limit=100`, { key: KEYS.enterprise })).length, 13, 'alpha untouched by the root reset');
      assert.equal(codeOf(await call(`${at(root, 'alpha')}/v1/pets`, { key: TINY })), 'temporarily_banned', 'alpha still bans the tiny key');
      assert.equal((await admin(at(root, 'alpha'), 'POST', '/reset')).status, 204);
      assert.deepEqual(ids(await call(`${at(root, 'alpha')}/v1/pets`, { key: KEYS.enterprise })), []);
      assert.equal((await call(`${at(root, 'alpha')}/v1/pets`, { key: TINY })).status, 200, 'alpha reset: the ban is gone');
      assert.equal(ids(await call(`${at(root, 'beta')}/v1/pets?limit=100`, { key: KEYS.enterprise })).length, 13, 'beta untouched by alpha\'s reset');
    });
  });

  test('every URL written inside keeps the prefix: Link, Location, OpenAPI servers; other paths under /ns/ are the root\'s 404', async () => {
    await withService(2, async (_srv, root) => {
      const base = `${root}/ns/links/v1`;
      const created = await post(`${base}/pets`, KEYS.enterprise, { name: 'Rex', categoryId: 1 });
      assert.equal(created.headers.get('location'), `${base}/pets/1`);
      const got = await call(`${base}/pets/1`, { key: KEYS.enterprise });
      assert.equal(got.status, 200, got.text);
      assert.match(String(got.headers.get('link')), new RegExp(`<${base.replace(/[.]/g, '\\.')}/pets>`));
      await post(`${base}/pets`, KEYS.enterprise, { name: 'Tom', categoryId: 1 });
      const page = await call(`${base}/pets?limit=1`, { key: KEYS.enterprise });
      assert.equal(page.status, 200, page.text);
      assert.ok(String(page.headers.get('link')).includes(`<${base}/pets?`), String(page.headers.get('link')));
      const doc = (await call(`${base}/openapi.json`)).json as { servers: Array<{ url: string }> };
      assert.equal(doc.servers[0]?.url, base);
      assert.ok(doc.servers.every((s) => s.url.includes('/ns/links/v1')), JSON.stringify(doc.servers));
      const rootDoc = (await call(`${root}/v1/openapi.json`)).json as { servers: Array<{ url: string }> };
      assert.equal(rootDoc.servers[0]?.url, `${root}/v1`);
      assert.equal((await call(`${root}/ns/links/healthz`, { key: KEYS.enterprise })).status, 404);
      assert.equal((await call(`${root}/ns/links`, { key: KEYS.enterprise })).status, 404);
      assert.equal((await call(`${root}/ns/links/v1/pets`)).status, 401, 'inside a namespace, the same keys');
    });
  });

  test('pets in a namespace are never written to the data file', async () => {
    const dir = tempDir();
    const data = join(dir, 'pets.json');
    const srv = await startBundle(['--config', writeConfig(dir, config(2)), '--data', data], { cwd: dir });
    try {
      const root = srv.url.replace(/\/v1$/, '');
      assert.equal((await post(`${root}/ns/mem/v1/pets`, KEYS.enterprise, { name: 'only-in-memory', categoryId: 1 })).status, 201);
      assert.equal((await post(`${root}/v1/pets`, KEYS.enterprise, { name: 'on-disk', categoryId: 1 })).status, 201);
    } finally {
      assert.equal(await srv.stop(), 0);
    }
    // The data file and whatever the store keeps beside it (its journal, its snapshot).
    const written = readdirSync(dir).filter((f) => f.startsWith('pets.json')).map((f) => readFileSync(join(dir, f), 'utf8')).join('\n');
    assert.ok(written.includes('on-disk'), 'the root pet is on disk');
    assert.ok(!written.includes('only-in-memory'), 'the namespace pet is not');
  });
});

describe('faults in a namespace and pipelining', () => {
  /** One connection, one write: `request`; what came back before the server closed it. */
  function raw(srv: Running, request: string): Promise<string> {
    const { hostname, port } = new URL(srv.url);
    return new Promise((resolve, reject) => {
      const socket = connect(Number(port), hostname, () => socket.write(request));
      let bytes = '';
      socket.on('data', (d: Buffer) => { bytes += d.toString('latin1'); });
      socket.on('end', () => resolve(bytes));
      socket.on('error', (err: NodeJS.ErrnoException) => (err.code === 'ECONNRESET' ? resolve(bytes) : reject(err)));
    });
  }
  const rawGet = (path: string): string => `GET ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${KEYS.enterprise}\r\n\r\n`;
  function rawPost(path: string, body: unknown, last = false): string {
    const text = JSON.stringify(body);
    return `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${KEYS.enterprise}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\n${last ? 'Connection: close\r\n' : ''}\r\n${text}`;
  }

  test('a create pipelined behind an answer a namespace\'s fault breaks is not handled, as in the root', async () => {
    await withService(4, async (srv, root) => {
      const ns = at(root, 'faulty');
      assert.equal((await admin(ns, 'POST', '/seed', [{ name: 'A', categoryId: 1 }])).status, 201);
      for (const kind of ['truncated', 'reset', 'empty']) {
        const armed = await admin(ns, 'POST', '/faults', { operation: 'getPet', count: 1, kind });
        assert.equal(armed.status, 200, armed.text);
        // One write: the GET, then a create pipelined behind it, parsed from the same read.
        const broken = await raw(srv, rawGet('/ns/faulty/v1/pets/1') + rawPost('/ns/faulty/v1/pets', { name: `behind ${kind}`, categoryId: 1 }));
        assert.doesNotMatch(broken, /HTTP\/1\.1 201 /, `${kind}: no 201 can leave`);
        const names = ((await call(`${ns}/v1/pets`, { key: KEYS.enterprise })).json as Array<{ name: string }>).map((p) => p.name);
        assert.deepEqual(names, ['A'], `${kind}: the create behind the broken answer was stored without its 201`);
      }
      // The root has no fault armed: there a create pipelined behind a GET is answered as ever.
      const fine = await raw(srv, rawGet('/v1/pets') + rawPost('/v1/pets', { name: 'B', categoryId: 1 }, true));
      assert.equal(fine.match(/HTTP\/1\.1 20[01] /g)?.length, 2, fine);
    });
  });
});
