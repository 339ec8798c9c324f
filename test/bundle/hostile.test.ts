// The harness and the process as a hostile or careless client sees them: concurrent admin
// calls across workers, and requests in flight when the service is told to stop. Black-box,
// against the built bundle.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { request } from 'node:http';
import net from 'node:net';
import { KEYS, call, startBundle, tempDir, testConfig, writeConfig, type Running, once, until, type Answer } from '../support/bundle.js';
import { skipUnless } from '../support/engines.js';
import { startPostgres, type PostgresServer } from '../support/postgres.js';
import { startRedis, type RedisServer } from '../support/redis.js';
import { ResponseParser, header, portOf, sleep, type RawResponse } from '../support/wire.js';

const ADMIN = 'admin-key-for-hostile-tests-0123';

describe('the harness across two workers', { skip: skipUnless('the harness across --workers', ['postgres', 'redis']) }, () => {
  let pg: PostgresServer;
  let redis: RedisServer;
  let svc: Running;
  const admin = (method: string, path: string, body?: unknown): Promise<Answer> =>
    once(`${svc.url.replace(/\/v1$/, '')}/__admin${path}`, { method, key: ADMIN, body });

  before(async () => {
    [pg, redis] = await Promise.all([startPostgres(), startRedis()]);
    const dir = tempDir();
    svc = await startBundle(['--config', writeConfig(dir, testConfig({ admin: { key: ADMIN } })), '--store', pg.url, '--limits', redis.url, '--workers', '2'], { cwd: dir });
  });
  after(async () => {
    // SIGTERM: the primary stops its workers (a SIGKILL would leave them running a while).
    if (svc !== undefined && svc.proc.exitCode === null) await svc.stop();
    await Promise.all([pg?.close(), redis?.close()]);
  });

  test('concurrent advances, answered by both workers, all add up in every worker', async () => {
    for (let round = 0; round < 3; round++) {
      assert.equal((await admin('POST', '/reset')).status, 204);
      const moves = await Promise.all(Array.from({ length: 20 }, () => admin('POST', '/clock', { advanceMs: 1000 })));
      for (const m of moves) assert.equal(m.status, 200, m.body);
      for (let i = 0; i < 6; i++) {
        const clock = JSON.parse((await admin('GET', '/clock')).body) as { offsetMs: number };
        assert.equal(clock.offsetMs, 20_000, `round ${round}: 20 advances of 1000 ms were each answered 200; a worker is ${clock.offsetMs} ms ahead`);
      }
    }
  });

  test('paging the journal forward with since, while requests come in over both workers, sees each request once', async () => {
    for (let round = 0; round < 3; round++) {
      assert.equal((await admin('DELETE', '/requests')).status, 204);
      const sent = new Set<string>();
      let done = false;
      const load = Promise.all(Array.from({ length: 8 }, async () => {
        for (let i = 0; i < 50; i++) {
          const res = await new Promise<string>((resolve, reject) => {
            const req = request(`${svc.url}/pets?limit=1`, { headers: { authorization: `Bearer ${KEYS.enterprise}`, connection: 'close' }, agent: false }, (r) => {
              r.resume();
              r.on('end', () => resolve(String(r.headers['x-request-id'])));
            });
            req.on('error', reject);
            req.end();
          });
          sent.add(res);
        }
      })).then(() => { done = true; });
      const seen: string[] = [];
      let since: string | undefined;
      for (;;) {
        const finished = done;
        const page = await admin('GET', `/requests?limit=7${since === undefined ? '' : `&since=${since}`}`);
        assert.equal(page.status, 200, page.body);
        const { requests } = JSON.parse(page.body) as { requests: Array<{ requestId: string }> };
        seen.push(...requests.map((r) => r.requestId));
        if (requests.length > 0) since = requests[requests.length - 1]?.requestId;
        if (finished && requests.length === 0) break;
      }
      await load;
      const twice = seen.filter((id, i) => seen.indexOf(id) !== i);
      const missed = [...sent].filter((id) => !seen.includes(id));
      assert.deepEqual({ twice, missed }, { twice: [], missed: [] }, `round ${round}: ${sent.size} requests, ${seen.length} paged`);
    }
  });

  // Each catch of a count fault is granted by the primary, which counts the claims of every
  // worker: before that, each worker counted down on its own, and requests reaching both at
  // once were caught up to `count` times in each (seen: 38 of a count of 20).
  test('a count fault catches exactly `count` requests, also when they reach both workers at once', async () => {
    try {
      for (const count of [1, 5, 20]) {
        const armed = await admin('POST', '/faults', { operation: 'listPets', status: 503, count });
        assert.equal(armed.status, 200, armed.body);
        const answers = await Promise.all(Array.from({ length: 60 }, () => once(`${svc.url}/pets`, { key: KEYS.enterprise })));
        assert.equal(answers.filter((a) => a.status === 503).length, count, `a count fault of ${count}, 60 requests at once over two workers`);
      }
    } finally {
      assert.equal((await admin('DELETE', '/faults')).status, 204);
    }
  });

  // Before, a worker counted the other workers' catches in `remaining` only: after 10 of a count
  // of 20, each of two workers listed fired 5, remaining 10.
  test('every worker lists a count fault with the catches of all workers: fired and remaining add up', async () => {
    try {
      assert.equal((await admin('POST', '/faults', { operation: 'listPets', status: 503, count: 20 })).status, 200);
      for (let i = 0; i < 10; i++) assert.equal((await once(`${svc.url}/pets`, { key: KEYS.enterprise })).status, 503);
      for (let i = 0; i < 4; i++) {
        const { faults } = JSON.parse((await admin('GET', '/faults')).body) as { faults: Array<{ fired: number; remaining: number }> };
        assert.deepEqual(faults.map((f) => [f.fired, f.remaining]), [[10, 10]]);
      }
    } finally {
      assert.equal((await admin('DELETE', '/faults')).status, 204);
    }
  });
  // Before, sets of one operation made through different workers at the same moment crossed
  // on their way: each worker kept another's, the listing depended on the worker, and a count
  // of 5 caught 10 (seen in 4 rounds of 5).
  test('sets of one fault through both workers at once leave both with the same fault: one count', async () => {
    try {
      for (let round = 0; round < 5; round++) {
        const sets = await Promise.all(Array.from({ length: 4 }, (_, k) => admin('POST', '/faults', { operation: 'listPets', status: 503, count: 5, retryAfter: k + 1 })));
        for (const s of sets) assert.equal(s.status, 200, s.body);
        const listings = new Set<string>();
        for (let i = 0; i < 4; i++) listings.add((await admin('GET', '/faults')).body);
        assert.equal(listings.size, 1, [...listings].join('\n'));
        const answers = await Promise.all(Array.from({ length: 30 }, () => once(`${svc.url}/pets`, { key: KEYS.enterprise })));
        assert.equal(answers.filter((a) => a.status === 503).length, 5, `round ${round}`);
        assert.equal((await admin('DELETE', '/faults')).status, 204);
      }
    } finally {
      assert.equal((await admin('DELETE', '/faults')).status, 204);
    }
  });

  // The primary remembers the catches of the last 1,000 armings claimed: before, a fault armed
  // long ago and not claimed since was forgotten after 1,000 others, and its count began again.
  test('a count fault left armed while a thousand others come and go still catches only what is left of it', async () => {
    try {
      assert.equal((await admin('POST', '/faults', { operation: '*', status: 429, count: 3 })).status, 200);
      assert.equal((await once(`${svc.url}/pets/1`, { key: KEYS.enterprise })).status, 429);
      for (let i = 0; i < 1_010; i++) {
        assert.equal((await admin('POST', '/faults', { operation: 'listPets', status: 503, count: 1 })).status, 200);
        assert.equal((await once(`${svc.url}/pets`, { key: KEYS.enterprise })).status, 503);
      }
      const answers = await Promise.all(Array.from({ length: 10 }, () => once(`${svc.url}/pets/1`, { key: KEYS.enterprise })));
      assert.equal(answers.filter((a) => a.status === 429).length, 2, 'what was left of the "*" fault');
    } finally {
      assert.equal((await admin('DELETE', '/faults')).status, 204);
    }
  });

  // Before, a worker the primary restarted after a crash started with no faults: it caught none
  // of its requests and listed none, so the listing depended on the worker that answered.
  // Last in this group: it kills a worker.
  test('a worker restarted after a SIGKILL takes over the armed faults: the same listing, one count for all', async () => {
    try {
      assert.equal((await admin('POST', '/faults', { operation: 'listPets', status: 503, count: 10 })).status, 200);
      for (let i = 0; i < 3; i++) assert.equal((await once(`${svc.url}/pets`, { key: KEYS.enterprise })).status, 503);
      const workers = (): number[] => execFileSync('pgrep', ['-P', String(svc.proc.pid)]).toString().trim().split('\n').map(Number);
      const [victim] = workers();
      assert.ok(victim !== undefined);
      process.kill(victim, 'SIGKILL');
      await until('a worker in its place', () => { const now = workers(); return now.length === 2 && !now.includes(victim); });
      await until('both workers answer', async () => {
        const ids = await Promise.all(Array.from({ length: 8 }, async () => String((await admin('GET', '/faults')).headers['x-request-id'])));
        return new Set(ids.map((id) => id.split('-')[0])).size === 2;
      });
      for (let i = 0; i < 6; i++) {
        const { faults } = JSON.parse((await admin('GET', '/faults')).body) as { faults: Array<{ fired: number; remaining: number }> };
        assert.deepEqual(faults.map((f) => [f.fired, f.remaining]), [[3, 7]], `listing ${i}`);
      }
      const answers = await Promise.all(Array.from({ length: 30 }, () => once(`${svc.url}/pets`, { key: KEYS.enterprise })));
      assert.equal(answers.filter((a) => a.status === 503).length, 7, 'what was left of the count, over both workers');
    } finally {
      assert.equal((await admin('DELETE', '/faults')).status, 204);
    }
  });
});

/** Sends one request on a keep-alive connection and keeps it open: resolves with its answer and whether the server then closed. */
function keepAliveRequest(port: number, text: string): { answer: Promise<RawResponse>; closedByServer: Promise<boolean>; socket: net.Socket } {
  const socket = net.connect(port, '127.0.0.1');
  socket.on('error', () => undefined);
  const parser = new ResponseParser();
  let resolveAnswer: (r: RawResponse) => void = () => undefined;
  const answer = new Promise<RawResponse>((resolve) => { resolveAnswer = resolve; });
  socket.on('data', (d: Buffer) => {
    const [r] = parser.push(d);
    if (r !== undefined) resolveAnswer(r);
  });
  const closedByServer = new Promise<boolean>((resolve) => {
    socket.once('end', () => resolve(true));
    socket.once('close', () => resolve(false));
  });
  socket.write(text);
  return { answer, closedByServer, socket };
}

test('a request in flight when SIGTERM comes is answered with Connection: close, and its connection closed by the server', async () => {
  const dir = tempDir();
  const srv = await startBundle(['--config', writeConfig(dir, testConfig({ admin: { key: ADMIN } }))], { cwd: dir });
  try {
    const base = srv.url.replace(/\/v1$/, '');
    // Each create waits (an injected delay, which a stop ends at once): it is in flight when the stop begins.
    const fault = await call(`${base}/__admin/faults`, {
      method: 'POST', key: ADMIN, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ operation: 'createPet', delayMs: 30_000 }),
    });
    assert.equal(fault.status, 200, fault.text);
    const body = JSON.stringify({ name: 'in-flight', categoryId: 1 });
    const c = keepAliveRequest(portOf(srv.url), `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${KEYS.enterprise}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
    // A count fault is gone from the listing once it has caught its request: the create waits then.
    for (let i = 0; i < 500; i++) {
      const listed = (await call(`${base}/__admin/faults`, { key: ADMIN })).json as { faults: unknown[] };
      if (listed.faults.length === 0) break;
      await sleep(10);
    }
    srv.proc.kill('SIGTERM');
    const answer = await c.answer;
    assert.equal(answer.status, 201, answer.body.toString());
    assert.equal(header(answer, 'connection'), 'close', 'an answer given while stopping tells the client the connection ends');
    assert.equal(await c.closedByServer, true, 'the server closed the connection after that answer');
    c.socket.destroy();
    assert.equal(await srv.exited, 0, srv.stderr());
  } finally {
    if (srv.proc.exitCode === null) srv.proc.kill('SIGKILL');
  }
});

// writeBroken (src/http/broken.ts) writes the head with writeHead and then half the body with
// res.write(): on a HEAD answer node ignores the write, so the head, only stored until then,
// is never sent, and the socket.end() in the write's callback closes the connection with
// nothing written at all: a `truncated` HEAD is an `empty` one.
test('a truncated fault on a HEAD request sends the status line and the headers, then closes', async () => {
  const dir = tempDir();
  const srv = await startBundle(['--config', writeConfig(dir, testConfig({ admin: { key: ADMIN } }))], { cwd: dir });
  try {
    const fault = await call(`${srv.url.replace(/\/v1$/, '')}/__admin/faults`, {
      method: 'POST', key: ADMIN, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ operation: 'listPets', kind: 'truncated' }),
    });
    assert.equal(fault.status, 200, fault.text);
    const received = await new Promise<string>((resolve) => {
      const socket = net.connect(portOf(srv.url), '127.0.0.1');
      let got = '';
      socket.setEncoding('latin1');
      socket.on('data', (d: string) => { got += d; });
      socket.on('error', () => undefined);
      socket.on('close', () => resolve(got));
      socket.write(`HEAD /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${KEYS.enterprise}\r\n\r\n`);
    });
    assert.match(received, /^HTTP\/1\.1 200 OK\r\n[\s\S]*content-length: \d+\r\n/i, `a truncated HEAD answer: ${JSON.stringify(received)}`);
  } finally {
    assert.equal(await srv.stop(), 0);
  }
});
