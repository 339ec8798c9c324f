// The harness features against the built bundle: the request journal, the service clock moved
// over HTTP, named snapshots, the richer faults (every operation, probability with a seed,
// delay ranges, broken connections), and a client's whole backoff story told in milliseconds.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { join } from 'node:path';
import { KEYS, call, post, startBundle, tempDir, testConfig, writeConfig, type Res, type Running } from '../support/bundle.js';

const ADMIN_KEY = 'admin-key-for-harness-0123';

function admin(srv: Running, method: string, path: string, body?: unknown): Promise<Res> {
  return call(`${srv.url.replace(/\/v1$/, '')}/__admin${path}`, {
    method,
    key: ADMIN_KEY,
    ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  });
}

async function withHarness(fn: (srv: Running) => Promise<void>, extra: Record<string, unknown> = {}, args: string[] = []): Promise<void> {
  const dir = tempDir();
  const config = writeConfig(dir, testConfig({ admin: { key: ADMIN_KEY }, ...extra }));
  const srv = await startBundle(['--config', config, ...args], { cwd: dir });
  try {
    await fn(srv);
  } finally {
    await srv.stop();
  }
}

interface Entry {
  requestId: string; time: string; method: string; path: string; query: Record<string, unknown>; key: string | null;
  status: number; durationMs: number; idempotencyKey: string | null; body: unknown;
}

async function journal(srv: Running, query = ''): Promise<{ requests: Entry[]; dropped: number }> {
  const res = await admin(srv, 'GET', `/requests${query}`);
  assert.equal(res.status, 200, res.text);
  return res.json as { requests: Entry[]; dropped: number };
}

/** One raw HTTP/1.1 exchange: every byte the server sent, and how the connection ended. */
function raw(srv: Running, request: string): Promise<{ bytes: string; ended: 'end' | 'reset' }> {
  const { hostname, port } = new URL(srv.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(request));
    let bytes = '';
    socket.on('data', (d: Buffer) => { bytes += d.toString('latin1'); });
    socket.on('end', () => resolve({ bytes, ended: 'end' }));
    socket.on('error', (err: NodeJS.ErrnoException) => (err.code === 'ECONNRESET' ? resolve({ bytes, ended: 'reset' }) : reject(err)));
  });
}

function rawPost(srv: Running, body: unknown, headers: Record<string, string> = {}): string {
  const text = JSON.stringify(body);
  const extra = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('');
  return `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${KEYS.enterprise}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\n${extra}\r\n${text}`;
}

const rawGet = (path: string): string => `GET ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${KEYS.enterprise}\r\n\r\n`;

describe('request journal', () => {
  test('records every /v1 request, rejected ones too, with the fields a harness checks; admin requests are not recorded', async () => {
    await withHarness(async (srv) => {
      const created = await call(`${srv.url}/pets?x=1&x=2&y=3`, {
        method: 'POST', key: KEYS.free, headers: { 'content-type': 'application/json', 'idempotency-key': 'k-1' }, body: JSON.stringify({ name: 'Rex', categoryId: 1 }),
      });
      assert.equal(created.status, 201, created.text);
      assert.equal((await call(`${srv.url}/pets`)).status, 401);
      assert.equal((await call(`${srv.url}/nowhere`, { key: KEYS.pro })).status, 404);
      assert.equal((await post(`${srv.url}/pets`, KEYS.pro, { name: '' })).status, 400);
      assert.equal((await admin(srv, 'GET', '/faults')).status, 200);
      const { requests, dropped } = await journal(srv);
      assert.equal(dropped, 0);
      assert.deepEqual(requests.map((r) => [r.method, r.path, r.status, r.key]), [
        ['POST', '/v1/pets', 201, 'free-test'], ['GET', '/v1/pets', 401, null], ['GET', '/v1/nowhere', 404, 'pro-test'], ['POST', '/v1/pets', 400, 'pro-test'],
      ]);
      const first = requests[0] as Entry;
      assert.equal(first.requestId, created.headers.get('x-request-id'));
      assert.deepEqual(first.query, { x: ['1', '2'], y: '3' });
      assert.equal(first.idempotencyKey, 'k-1');
      assert.deepEqual(first.body, { name: 'Rex', categoryId: 1 });
      assert.match(first.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      assert.equal(typeof first.durationMs, 'number');
      assert.equal((requests[1] as Entry).body, null);
      assert.equal(JSON.stringify(requests).includes(KEYS.free), false, 'never the key itself');
    });
  });

  test('filters, count, since and limit; a bad filter is a 400 naming it; DELETE and reset empty it', async () => {
    await withHarness(async (srv) => {
      for (let i = 0; i < 3; i++) await call(`${srv.url}/pets`, { key: KEYS.free });
      await call(`${srv.url}/pets/1`, { key: KEYS.pro });
      assert.equal((await call(`${srv.url}/pets`)).status, 401);
      assert.equal((await journal(srv, '?path=/v1/pets&status=200')).requests.length, 3);
      assert.equal((await journal(srv, '?key=pro-test')).requests.length, 1);
      assert.equal((await journal(srv, '?method=get&limit=2')).requests.length, 2);
      const count = await admin(srv, 'GET', '/requests/count?status=401');
      assert.deepEqual(count.json, { count: 1 });
      const all = (await journal(srv)).requests;
      const after = await journal(srv, `?since=${encodeURIComponent((all[2] as Entry).requestId)}`);
      assert.deepEqual(after.requests.map((r) => r.requestId), all.slice(3).map((r) => r.requestId));
      for (const bad of ['?status=abc', '?limit=0', '?limit=1001', '?colour=red', '?path=pets', '?since=nope']) {
        const res = await admin(srv, 'GET', `/requests${bad}`);
        assert.equal(res.status, 400, bad);
        const name = /[?](\w+)=/.exec(bad)?.[1] as string;
        assert.match((res.json as { message: string }).message, new RegExp(name), bad);
      }
      assert.equal((await admin(srv, 'GET', '/requests/count?status=1')).status, 400);
      assert.equal((await admin(srv, 'DELETE', '/requests')).status, 204);
      assert.deepEqual((await journal(srv)).requests, []);
      await call(`${srv.url}/pets`, { key: KEYS.free });
      assert.equal((await admin(srv, 'POST', '/reset')).status, 204);
      assert.deepEqual((await admin(srv, 'GET', '/requests/count')).json, { count: 0 });
    });
  });

  test('a bounded ring: the oldest go and are counted as dropped; admin.journal 0 records nothing', async () => {
    await withHarness(async (srv) => {
      for (let i = 0; i < 5; i++) await call(`${srv.url}/pets?n=${i}`, { key: KEYS.free });
      const page = await journal(srv);
      assert.equal(page.dropped, 2);
      assert.deepEqual(page.requests.map((r) => r.query.n), ['2', '3', '4']);
      await admin(srv, 'DELETE', '/requests');
      assert.equal((await journal(srv)).dropped, 0);
    }, { admin: { key: ADMIN_KEY, journal: 3 } });
    await withHarness(async (srv) => {
      await call(`${srv.url}/pets`, { key: KEYS.free });
      assert.deepEqual(await journal(srv), { requests: [], dropped: 0 });
    }, { admin: { key: ADMIN_KEY, journal: 0 } });
  });
});

describe('clock', () => {
  test('moves forward only, journal times follow it, reset returns it to real time', async () => {
    await withHarness(async (srv) => {
      const before = await admin(srv, 'GET', '/clock');
      assert.equal(before.status, 200);
      assert.equal((before.json as { offsetMs: number }).offsetMs, 0);
      const moved = await admin(srv, 'POST', '/clock', { advanceMs: 86_400_000 * 365 });
      assert.equal(moved.status, 200, moved.text);
      const m = moved.json as { now: string; offsetMs: number };
      assert.equal(m.offsetMs, 86_400_000 * 365);
      assert.ok(Date.parse(m.now) - Date.parse((before.json as { now: string }).now) >= 86_400_000 * 365);
      await call(`${srv.url}/pets`, { key: KEYS.free });
      const [entry] = (await journal(srv)).requests;
      assert.ok(Date.parse((entry as Entry).time) >= Date.parse(m.now), 'journal time on the moved clock');
      for (const bad of [{ advanceMs: -1 }, { advanceMs: 1.5 }, { advanceMs: '5' }, { advanceMs: 315_360_000_001 }, {}, { advanceMs: 1, back: true }, [1], 5]) {
        const res = await admin(srv, 'POST', '/clock', bad);
        assert.equal(res.status, 400, JSON.stringify(bad));
      }
      assert.equal(((await admin(srv, 'GET', '/clock')).json as { offsetMs: number }).offsetMs, 86_400_000 * 365, 'a refused move moves nothing');
      assert.equal((await admin(srv, 'POST', '/reset')).status, 204);
      assert.equal(((await admin(srv, 'GET', '/clock')).json as { offsetMs: number }).offsetMs, 0);
    });
  });

  test("a client's whole backoff story: 429 and Retry-After, a ban and its end, a day limit and its reset, in moved time", async () => {
    await withHarness(async (srv) => {
      const get = (): Promise<Res> => call(`${srv.url}/pets`, { key: KEYS.free });
      const codeOf = (r: Res): string => (r.json as { code: string }).code;
      assert.equal((await get()).status, 200);
      assert.equal((await get()).status, 200);
      const limited = await get();
      assert.equal(limited.status, 429);
      assert.equal(codeOf(limited), 'rate_limited');
      const wait = Number(limited.headers.get('retry-after'));
      assert.ok(wait >= 1 && wait <= 60, `Retry-After ${wait}`);
      await admin(srv, 'POST', '/clock', { advanceMs: wait * 1000 });
      const again = await get();
      assert.equal(again.status, 200, 'after Retry-After of moved time, served');
      // X-RateLimit-Reset is a time on the moved clock: at least `wait` s ahead of real time.
      assert.ok(Number(again.headers.get('x-ratelimit-reset')) >= Math.floor(Date.now() / 1000) + wait - 2, String(again.headers.get('x-ratelimit-reset')));

      // Out of tokens again; keep asking: refusals turn into a ban.
      let banned: Res | undefined;
      for (let i = 0; i < 6 && banned === undefined; i++) {
        const r = await get();
        if (r.status === 429 && codeOf(r) === 'temporarily_banned') banned = r;
      }
      assert.ok(banned, 'a ban after repeated 429s');
      const banWait = Number(banned.headers.get('retry-after'));
      assert.ok(banWait > 60, `the ban's Retry-After ${banWait}`);
      await admin(srv, 'POST', '/clock', { advanceMs: (banWait - 5) * 1000 });
      const still = await get();
      assert.equal(codeOf(still), 'temporarily_banned', 'still banned 5 s before its end');
      await admin(srv, 'POST', '/clock', { advanceMs: 5000 });
      assert.equal((await get()).status, 200, 'the ban is over');

      // The day limit: spaced out so the minute bucket never binds.
      let dayLimited: Res | undefined;
      for (let i = 0; i < 10 && dayLimited === undefined; i++) {
        await admin(srv, 'POST', '/clock', { advanceMs: 60_000 });
        const r = await get();
        if (r.status === 429) dayLimited = r;
      }
      assert.ok(dayLimited, 'the day limit binds');
      assert.equal(codeOf(dayLimited), 'rate_limited');
      const dayWait = Number(dayLimited.headers.get('retry-after'));
      assert.ok(dayWait > 60, `the day bucket's Retry-After ${dayWait}`);
      assert.match(dayLimited.headers.get('ratelimit') ?? '', /t=\d+/);
      await admin(srv, 'POST', '/clock', { advanceMs: dayWait * 1000 });
      assert.equal((await get()).status, 200, 'served once the day bucket has a token again');
      // And the reset: the limits full, the clock back to real time.
      for (let i = 0; i < 10; i++) await get();
      assert.equal((await admin(srv, 'POST', '/reset')).status, 204);
      assert.equal((await get()).status, 200);
    }, {
      plans: { free: { perMinute: 2, perDay: 6 }, pro: { perMinute: 300, perDay: 10000 }, business: { perMinute: 1000, perDay: 100000 } },
      ban: { after: 2, seconds: 3600 },
    });
  });
});

describe('snapshots', () => {
  test('save, list, restore exactly (pets, next id, limits, faults, clock), replace, delete, 404, 409 for a 17th', async () => {
    const dir = tempDir();
    await withHarness(async (srv) => {
      await admin(srv, 'POST', '/seed', [{ name: 'A', categoryId: 1 }, { name: 'B', categoryId: 1 }]);
      await call(`${srv.url}/pets`, { key: KEYS.free });
      assert.equal((await admin(srv, 'POST', '/faults', { operation: 'getPet', status: 503, count: 3 })).status, 200);
      await admin(srv, 'POST', '/clock', { advanceMs: 1000 });
      const saved = await admin(srv, 'PUT', '/snapshots/base');
      assert.equal(saved.status, 201, saved.text);
      assert.deepEqual(saved.json, { name: 'base', pets: 2 });
      const remainingBefore = (await call(`${srv.url}/pets`, { key: KEYS.free })).headers.get('x-ratelimit-remaining');

      await post(`${srv.url}/pets`, KEYS.pro, { name: 'C', categoryId: 2 });
      await admin(srv, 'POST', '/reset');
      assert.equal((await admin(srv, 'GET', '/snapshots')).status, 200, 'snapshots survive a reset');
      assert.equal((await admin(srv, 'POST', '/snapshots/base/restore')).status, 204);
      const pets = await call(`${srv.url}/pets`, { key: KEYS.pro });
      assert.deepEqual((pets.json as Array<{ name: string }>).map((p) => p.name), ['A', 'B']);
      const next = await post(`${srv.url}/pets`, KEYS.pro, { name: 'D', categoryId: 2 });
      assert.equal((next.json as { id: number }).id, 3, 'the next id as saved');
      assert.equal((await call(`${srv.url}/pets`, { key: KEYS.free })).headers.get('x-ratelimit-remaining'), remainingBefore, 'the bucket as saved');
      const faults = (await admin(srv, 'GET', '/faults')).json as { faults: Array<{ operation: string; remaining: number }> };
      assert.deepEqual(faults.faults.map((f) => [f.operation, f.remaining]), [['getPet', 3]]);
      assert.equal(((await admin(srv, 'GET', '/clock')).json as { offsetMs: number }).offsetMs, 1000);

      const listed = (await admin(srv, 'GET', '/snapshots')).json as { snapshots: Array<{ name: string; pets: number; time: string }> };
      assert.deepEqual(listed.snapshots.map((s) => [s.name, s.pets]), [['base', 2]]);
      assert.equal((await admin(srv, 'PUT', '/snapshots/base')).status, 201, 'the same name replaces');
      assert.equal(((await admin(srv, 'GET', '/snapshots')).json as { snapshots: unknown[] }).snapshots.length, 1);
      assert.equal((await admin(srv, 'POST', '/snapshots/none/restore')).status, 404);
      assert.equal((await admin(srv, 'DELETE', '/snapshots/none')).status, 404);
      assert.equal((await admin(srv, 'PUT', '/snapshots/bad%20name')).status, 400);
      for (let i = 1; i < 16; i++) assert.equal((await admin(srv, 'PUT', `/snapshots/s${i}`)).status, 201);
      const seventeenth = await admin(srv, 'PUT', '/snapshots/s16');
      assert.equal(seventeenth.status, 409);
      assert.equal((seventeenth.json as { code: string }).code, 'conflict');
      assert.equal((await admin(srv, 'DELETE', '/snapshots/s1')).status, 204);
      assert.equal((await admin(srv, 'PUT', '/snapshots/s16')).status, 201);
    }, {}, ['--data', join(dir, 'pets.json')]);
  });
});

describe('faults', () => {
  test('reset and empty end the connection with no answer (before the handler of anything but a create)', async () => {
    await withHarness(async (srv) => {
      await admin(srv, 'POST', '/seed', [{ name: 'A', categoryId: 1 }]);
      const armed = await admin(srv, 'POST', '/faults', { operation: 'getPet', kind: 'reset' });
      assert.equal(armed.status, 200, armed.text);
      const reset = await raw(srv, rawGet('/v1/pets/1'));
      assert.deepEqual(reset, { bytes: '', ended: 'reset' });
      assert.equal((await call(`${srv.url}/pets/1`, { key: KEYS.enterprise })).status, 200, 'one request caught');
      await admin(srv, 'POST', '/faults', { operation: '*', kind: 'empty' });
      const empty = await raw(srv, rawGet('/v1/pets'));
      assert.equal(empty.bytes, '');
      const broken = (await journal(srv, '?status=0')).requests;
      assert.deepEqual(broken.map((e) => e.path), ['/v1/pets/1', '/v1/pets'], 'recorded with status 0: no answer');
    });
  });

  test('a truncated create is stored; retried with the same Idempotency-Key it gives exactly one pet, and says it was replayed', async () => {
    await withHarness(async (srv) => {
      await admin(srv, 'POST', '/faults', { operation: 'createPet', kind: 'truncated' });
      const cut = await raw(srv, rawPost(srv, { name: 'Once', categoryId: 1 }, { 'Idempotency-Key': 'retry-me' }));
      assert.match(cut.bytes, /^HTTP\/1\.1 201 /);
      const length = Number(/content-length: (\d+)/i.exec(cut.bytes)?.[1]);
      const body = cut.bytes.slice(cut.bytes.indexOf('\r\n\r\n') + 4);
      assert.equal(body.length, length >> 1, 'half the body');
      const retried = await call(`${srv.url}/pets`, {
        method: 'POST', key: KEYS.enterprise, headers: { 'content-type': 'application/json', 'idempotency-key': 'retry-me' }, body: JSON.stringify({ name: 'Once', categoryId: 1 }),
      });
      assert.equal(retried.status, 201);
      assert.equal(retried.headers.get('idempotent-replayed'), 'true');
      const all = await call(`${srv.url}/pets`, { key: KEYS.enterprise });
      assert.deepEqual((all.json as Array<{ name: string }>).map((p) => p.name), ['Once']);
      for (const kind of ['reset', 'empty']) {
        await admin(srv, 'POST', '/faults', { operation: 'createPet', kind });
        await raw(srv, rawPost(srv, { name: kind, categoryId: 1 }));
      }
      const names = ((await call(`${srv.url}/pets`, { key: KEYS.enterprise })).json as Array<{ name: string }>).map((p) => p.name);
      assert.deepEqual(names, ['Once', 'reset', 'empty'], 'stored before the connection broke');
      const first = await post(`${srv.url}/pets`, KEYS.enterprise, { name: 'plain', categoryId: 1 });
      assert.equal(first.headers.get('idempotent-replayed'), null);
    });
  });

  test('a create pipelined behind an answer a fault breaks is not handled: nothing stored, nothing journaled', async () => {
    await withHarness(async (srv) => {
      await admin(srv, 'POST', '/seed', [{ name: 'A', categoryId: 1 }]);
      const cases: Array<Record<string, unknown>> = [
        { kind: 'truncated' }, { kind: 'reset' }, { kind: 'empty' },
        { kind: 'truncated', delayMs: 30 }, { kind: 'reset', delayMs: 30 }, { kind: 'empty', delayMs: 30 },
      ];
      for (const fault of cases) {
        const label = JSON.stringify(fault);
        const armed = await admin(srv, 'POST', '/faults', { operation: 'getPet', count: 1, ...fault });
        assert.equal(armed.status, 200, armed.text);
        // One write: the GET, then a create pipelined behind it, parsed from the same read.
        const broken = await raw(srv, rawGet('/v1/pets/1') + rawPost(srv, { name: `behind ${label}`, categoryId: 1 }));
        assert.doesNotMatch(broken.bytes, /HTTP\/1\.1 201 /, `${label}: no 201 can leave`);
        const names = ((await call(`${srv.url}/pets`, { key: KEYS.enterprise })).json as Array<{ name: string }>).map((p) => p.name);
        assert.deepEqual(names, ['A'], `${label}: the create behind the broken answer was stored without its 201`);
      }
      const creates = (await journal(srv)).requests.filter((e) => e.method === 'POST');
      assert.deepEqual(creates, [], 'no create was recorded');
      // Without a fault armed, a create pipelined behind a GET is answered as ever.
      const fine = await raw(srv, rawGet('/v1/pets/1') + rawPost(srv, { name: 'B', categoryId: 1 }).replace('Host: x\r\n', 'Host: x\r\nConnection: close\r\n'));
      assert.equal(fine.bytes.match(/HTTP\/1\.1 20[01] /g)?.length, 2, fine.bytes);
    });
  });

  test('"*", probability with a seed repeating run to run, delay ranges, and the listing', async () => {
    const pattern = async (): Promise<number[]> => {
      let statuses: number[] = [];
      await withHarness(async (srv) => {
        const armed = await admin(srv, 'POST', '/faults', { operation: '*', status: 503, probability: 0.5, seed: 42 });
        assert.equal(armed.status, 200, armed.text);
        for (let i = 0; i < 20; i++) statuses.push((await call(`${srv.url}/pets`, { key: KEYS.enterprise })).status);
        const listing = (await admin(srv, 'GET', '/faults')).json as { faults: Array<Record<string, unknown>> };
        assert.deepEqual(listing.faults.map((f) => [f.operation, f.probability, f.seed, f.fired]), [['*', 0.5, 42, statuses.filter((s) => s === 503).length]]);
        await admin(srv, 'POST', '/faults', { operation: 'listPets', delayMs: { min: 1, max: 20 }, count: 2 });
        const listed = (await admin(srv, 'GET', '/faults')).json as { faults: Array<Record<string, unknown>> };
        assert.deepEqual(listed.faults.find((f) => f.operation === 'listPets')?.delayMs, { min: 1, max: 20 });
        assert.equal((await call(`${srv.url}/pets`, { key: KEYS.enterprise })).status, 200);
        assert.equal((await admin(srv, 'DELETE', '/faults')).status, 204);
        assert.deepEqual((await admin(srv, 'GET', '/faults')).json, { faults: [] });
      });
      return statuses;
    };
    const a = await pattern();
    const b = await pattern();
    assert.deepEqual(a, b, 'the same seed, the same sequence');
    assert.ok(a.includes(503) && a.includes(200), `some of each: ${a.join(' ')}`);
  });
});
