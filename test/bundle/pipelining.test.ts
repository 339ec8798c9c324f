// Requests pipelined behind a POST on one connection (RFC 9112 section 9.3.2: only safe
// requests may be processed in parallel). A GET sent after a create sees the pet the create
// acknowledged; and a SIGTERM never leaves a pet stored whose 201 was never sent. Raw sockets
// against the built bundle, with a data file, so that every create waits for the disk.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { join } from 'node:path';
import { KEYS, call, startBundle, tempDir, testConfig, writeConfig } from '../support/bundle.js';
import { PipelinedConnection, ResponseParser, listAll, portOf, sleep, type RawResponse } from '../support/wire.js';

const key = KEYS.enterprise;
const AUTH = `Host: x\r\nAuthorization: Bearer ${key}\r\n`;

function create(name: string): string {
  const body = JSON.stringify({ name, categoryId: 1 });
  return `POST /v1/pets HTTP/1.1\r\n${AUTH}Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

function get(path: string): string {
  return `GET /v1${path} HTTP/1.1\r\n${AUTH}\r\n`;
}

function json(r: RawResponse): unknown {
  return JSON.parse(r.body.toString('utf8'));
}

test('create, get of its id, list, pipelined on one connection: the get and the list see the pet', async () => {
  const dir = tempDir();
  const srv = await startBundle(['--config', writeConfig(dir), '--data', join(dir, 'pets.json')], { cwd: dir });
  try {
    const port = portOf(srv.url);
    for (let round = 0; round < 5; round++) {
      // Ids are sequential: this round's creates get ids `id` and `id + 1`.
      const id = 2 * round + 1;
      const conn = await PipelinedConnection.open(port);
      const [created, got, listed, again, second] = await conn.send([
        create(`ryw-${id}`), get(`/pets/${id}`), get(`/pets?cursor=${id - 1}`),
        // A second create behind them, and the get of it: the order holds past the first.
        create(`ryw-${id + 1}`), get(`/pets/${id + 1}`),
      ]);
      conn.close();
      assert.equal(created?.status, 201);
      assert.equal((json(created as RawResponse) as { id: number }).id, id);
      assert.equal(got?.status, 200, `GET /pets/${id} after its 201: ${got?.body.toString()}`);
      assert.equal((json(got as RawResponse) as { name: string }).name, `ryw-${id}`);
      assert.deepEqual((json(listed as RawResponse) as Array<{ id: number }>).map((p) => p.id), [id]);
      assert.equal(again?.status, 201);
      assert.equal((json(again as RawResponse) as { id: number }).id, id + 1);
      assert.equal(second?.status, 200, `GET /pets/${id + 1} after its 201: ${second?.body.toString()}`);
    }
  } finally {
    assert.equal(await srv.stop(), 0);
  }
});

interface Connection {
  readonly responses: RawResponse[];
  readonly ended: Promise<void>;
}

function pipelineCreates(port: number, tag: string, count: number): Connection {
  const socket = net.connect(port, '127.0.0.1');
  socket.on('error', () => undefined);
  const parser = new ResponseParser();
  const responses: RawResponse[] = [];
  socket.on('data', (d: Buffer) => {
    try {
      responses.push(...parser.push(d));
    } catch {
      // a cut-short last response: what was whole is kept
    }
  });
  const ended = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.once('connect', () => socket.write(Array.from({ length: count }, (_, i) => create(`${tag}-${i}`)).join('')));
  return { responses, ended };
}

test('SIGTERM under pipelined creates: every pet stored was answered 201', async (t) => {
  const dir = tempDir();
  const data = join(dir, 'pets.json');
  const config = writeConfig(dir);
  // SIGTERM once the first answer came, and once 40 had: creates are being stored either way.
  for (const answered of [1, 40]) {
    const srv = await startBundle(['--config', config, '--data', data], { cwd: dir });
    const port = portOf(srv.url);
    const before = new Set((await listAll(srv.url, key)).map((p) => p.id));
    const conns = Array.from({ length: 8 }, (_, c) => pipelineCreates(port, `term-${answered}-${c}`, 100));
    const total = (): number => conns.reduce((n, c) => n + c.responses.length, 0);
    for (let waited = 0; total() < answered && waited < 10_000; waited += 1) await sleep(1);
    const code = await srv.stop('SIGTERM');
    await Promise.all(conns.map((c) => c.ended));
    assert.equal(code, 0, srv.stderr());
    const acknowledged = new Set<number>();
    for (const c of conns) {
      for (const r of c.responses) {
        assert.equal(r.status, 201, r.body.toString());
        acknowledged.add((json(r) as { id: number }).id);
      }
    }

    const after = await startBundle(['--config', config, '--data', data], { cwd: dir });
    const stored = (await listAll(after.url, key)).map((p) => p.id).filter((id) => !before.has(id));
    assert.equal(await after.stop(), 0);
    const unanswered = stored.filter((id) => !acknowledged.has(id));
    t.diagnostic(`SIGTERM after ${answered} answers: ${acknowledged.size} answered 201, ${stored.length} stored`);
    assert.ok(stored.length > 0, 'the SIGTERM came while creates were being stored');
    assert.deepEqual(unanswered, [], `pets stored without their 201 (SIGTERM after ${answered} answers)`);
    assert.deepEqual([...acknowledged].filter((id) => !stored.includes(id)), [], 'every 201 is stored');
  }
});

/**
 * Writes `requests` on a fresh connection, half-closes it at once (FIN right behind the last
 * byte) and reads until the server closes: every response, and whether the close was clean.
 */
function sendThenHalfClose(port: number, requests: readonly string[]): Promise<{ responses: RawResponse[]; leftover: number; error: string | undefined }> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    const parser = new ResponseParser();
    const responses: RawResponse[] = [];
    let error: string | undefined;
    const overall = setTimeout(() => {
      error = 'timeout: the server neither answered nor closed in 20 s';
      socket.destroy();
    }, 20_000);
    socket.on('data', (d: Buffer) => {
      try {
        responses.push(...parser.push(d));
      } catch (err) {
        error = (err as Error).message;
      }
    });
    socket.on('error', (err: NodeJS.ErrnoException) => { error ??= err.code ?? err.message; });
    socket.on('close', () => {
      clearTimeout(overall);
      resolve({ responses, leftover: parser.pending, error });
    });
    socket.once('connect', () => socket.end(requests.join('')));
  });
}

for (const store of ['memory', 'file'] as const) {
  test(`pipelined creates, then the client half-closes at once (${store} store): every create answered 201, in order, then the close`, async () => {
    const dir = tempDir();
    const admin = 'admin-key-for-half-close-0123';
    const args = ['--config', writeConfig(dir, testConfig({ admin: { key: admin } })), ...(store === 'file' ? ['--data', join(dir, 'pets.json')] : [])];
    const srv = await startBundle(args, { cwd: dir });
    try {
      const port = portOf(srv.url);
      // The memory store answers a create within the read that brought it: a delay makes
      // it answer after the FIN, as the file store's fsync does.
      if (store === 'memory') {
        const fault = await call(`${srv.url.replace(/\/v1$/, '')}/__admin/faults`, {
          method: 'POST', key: admin, headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ operation: 'createPet', delayMs: 20, probability: 1 }),
        });
        assert.equal(fault.status, 200, fault.text);
      }
      for (const count of [1, 2, 5, 20]) {
        const tag = `hc-${store}-${count}`;
        const names = Array.from({ length: count }, (_, i) => `${tag}-${i}`);
        const res = await sendThenHalfClose(port, names.map(create));
        const stored = (await listAll(srv.url, key)).filter((p) => p.name.startsWith(`${tag}-`));
        assert.equal(res.error, undefined, `${count} creates: the connection ended badly`);
        assert.equal(res.leftover, 0, `${count} creates: a response was cut short`);
        assert.deepEqual(res.responses.map((r) => r.status), names.map(() => 201), `${count} creates: each answered 201 (${stored.length} stored)`);
        assert.deepEqual(res.responses.map((r) => (json(r) as { name: string }).name), names, 'in order');
        assert.deepEqual(stored.map((p) => p.name), names, 'each stored once');
      }
    } finally {
      assert.equal(await srv.stop(), 0);
    }
  });
}

test('a create pipelined behind an upload answered 413 and closed is not stored: the client only ever sees the 413', async () => {
  const dir = tempDir();
  const srv = await startBundle(['--config', writeConfig(dir), '--data', join(dir, 'pets.json')], { cwd: dir });
  try {
    // 9 MiB announced: past the 8 MiB the service reads and drops, so it answers 413 with
    // Connection: close at once, and lingers reading what the client still sends.
    const size = 9 * 1024 * 1024;
    const upload = `POST /v1/pets HTTP/1.1\r\n${AUTH}Content-Type: application/json\r\nContent-Length: ${size}\r\n\r\n${' '.repeat(size)}`;
    for (const [i, behind] of [create('behind-413-a'), create('behind-413-b').replace('\r\n\r\n', '\r\nConnection: close\r\n\r\n')].entries()) {
      const res = await sendThenHalfClose(portOf(srv.url), [upload, behind]);
      assert.deepEqual(res.responses.map((r) => r.status), [413], `case ${i}: only the upload is answered (${res.error ?? 'closed'})`);
    }
    const stored = (await listAll(srv.url, key)).map((p) => p.name);
    assert.deepEqual(stored.filter((n) => n.startsWith('behind-413')), [], 'a create the client was never answered is not stored');
  } finally {
    assert.equal(await srv.stop(), 0);
  }
});
