// Connections the service answers outside node's request cycle (CONNECT, unparsable requests,
// timeouts), bodies nobody reads, and the bounds on connections and unfinished bodies. Raw
// sockets against the built bundle; the server's file descriptors are read from /proc.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { KEYS, call, startBundle, tempDir, testConfig, writeConfig, type Running } from '../support/bundle.js';
import { ResponseParser, errorBodyProblem, errorCode, fdCount, header, isAlive, portOf, sleep, type RawResponse } from '../support/wire.js';

const key = KEYS.enterprise;
const DRAIN_CAP = 8 * 1024 * 1024;

async function withServer(fn: (srv: Running) => Promise<void>, extra: Record<string, unknown> = {}): Promise<void> {
  const dir = tempDir();
  const srv = await startBundle(['--config', writeConfig(dir, testConfig(extra)), '--memory'], { cwd: dir });
  try {
    await fn(srv);
  } finally {
    srv.proc.kill('SIGKILL');
    await srv.exited;
  }
}

/** A client socket that never closes its side unless told to (the server must close). */
function connect(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true });
    socket.once('error', reject);
    socket.once('connect', () => {
      socket.off('error', reject);
      socket.on('error', () => undefined);
      resolve(socket);
    });
  });
}

/** Responses read from `socket` until it ends, or until `ms` pass. */
function responsesOf(socket: net.Socket): { list: RawResponse[]; ended: Promise<void> } {
  const parser = new ResponseParser();
  const list: RawResponse[] = [];
  socket.on('data', (d: Buffer) => list.push(...parser.push(d)));
  const ended = new Promise<void>((resolve) => {
    socket.once('end', resolve);
    socket.once('close', resolve);
  });
  return { list, ended };
}

/** Waits until the server holds at most `limit` file descriptors, for up to `ms`. */
async function fdsDownTo(pid: number, limit: number, ms: number): Promise<number> {
  const until = performance.now() + ms;
  let n = fdCount(pid);
  while (n > limit && performance.now() < until) {
    await sleep(100);
    n = fdCount(pid);
  }
  return n;
}

interface Streamed {
  readonly responses: RawResponse[];
  /** The server closed the connection (or reset it) before `timeoutMs`. */
  readonly closed: boolean;
  /** Body bytes handed to the kernel before the close. */
  readonly sent: number;
}

/**
 * Sends `head`, then body bytes as fast as the server takes them (raw, or as 64 KiB chunks),
 * until the server closes the connection or `timeoutMs` pass.
 */
function streamBody(port: number, head: string, chunked: boolean, timeoutMs: number): Promise<Streamed> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    const parser = new ResponseParser();
    const responses: RawResponse[] = [];
    const piece = Buffer.alloc(64 * 1024, 'a');
    const frame = chunked ? Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n')]) : piece;
    let sent = 0;
    let done = false;
    const finish = (closed: boolean): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ responses, closed, sent });
    };
    const timer = setTimeout(() => finish(false), timeoutMs);
    const pump = (): void => {
      while (!done && !socket.destroyed) {
        sent += piece.length;
        if (!socket.write(frame)) {
          socket.once('drain', pump);
          return;
        }
      }
    };
    socket.on('data', (d: Buffer) => responses.push(...parser.push(d)));
    socket.on('error', () => finish(true));
    socket.on('close', () => finish(true));
    socket.once('connect', () => {
      socket.write(head);
      pump();
    });
  });
}

describe('connections', { concurrency: true }, () => {
  test('CONNECT followed by a reset, five times: the service keeps serving', async () => {
    await withServer(async (srv) => {
      const port = portOf(srv.url);
      for (let i = 0; i < 5; i++) {
        const socket = await connect(port);
        await new Promise<void>((resolve) => socket.write('CONNECT example.invalid:443 HTTP/1.1\r\nHost: example.invalid:443\r\n\r\n', () => resolve()));
        socket.resetAndDestroy();
        await sleep(50);
      }
      await sleep(300);
      assert.ok(isAlive(srv.proc.pid ?? 0), `the process died; stderr: ${srv.stderr()}`);
      const res = await call(`${srv.url.replace(/\/v1$/, '')}/healthz`);
      assert.equal(res.status, 200);
    });
  });

  test('sockets answered outside the request cycle (CONNECT, 400) are closed after a short linger, even if the client never closes', async () => {
    await withServer(async (srv) => {
      const pid = srv.proc.pid ?? 0;
      const port = portOf(srv.url);
      const fd0 = fdCount(pid);
      const payloads = ['CONNECT example.invalid:443 HTTP/1.1\r\nHost: example.invalid:443\r\n\r\n', 'NOT HTTP AT ALL\r\n\r\n'];
      const held = await Promise.all(Array.from({ length: 40 }, async (_, i) => {
        const socket = await connect(port);
        const r = responsesOf(socket);
        socket.write(payloads[i % 2] as string);
        return { socket, r };
      }));
      try {
        await Promise.all(held.map((h) => h.r.ended));
        for (const [i, h] of held.entries()) {
          const [answer] = h.r.list;
          assert.ok(answer, `connection ${i} got no answer`);
          assert.equal(answer.status, i % 2 === 0 ? 405 : 400);
          assert.equal(errorBodyProblem(answer), undefined);
        }
        // Every client still holds its side open; the server must not.
        const fds = await fdsDownTo(pid, fd0 + 2, 4000);
        assert.ok(fds <= fd0 + 2, `the server still holds ${fds} fds (${fd0} before 40 answered connections)`);
      } finally {
        for (const h of held) h.socket.destroy();
      }
    });
  });

  test('silent connections get their 408 at the headers timeout and are then closed, even if the client never closes', async () => {
    await withServer(async (srv) => {
      const pid = srv.proc.pid ?? 0;
      const fd0 = fdCount(pid);
      const held = await Promise.all(Array.from({ length: 20 }, async () => {
        const socket = await connect(portOf(srv.url));
        return { socket, r: responsesOf(socket) };
      }));
      try {
        await Promise.all(held.map((h) => h.r.ended));
        for (const h of held) {
          const [answer] = h.r.list;
          assert.ok(answer);
          assert.equal(answer.status, 408);
          assert.equal(errorCode(answer), 'request_timeout');
        }
        const fds = await fdsDownTo(pid, fd0 + 2, 4000);
        assert.ok(fds <= fd0 + 2, `the server still holds ${fds} fds (${fd0} before 20 timed-out connections)`);
      } finally {
        for (const h of held) h.socket.destroy();
      }
    });
  });

  const huge = 'Content-Length: 100000000000\r\n';
  const early = [
    { name: '401 without a key', head: `GET /v1/pets HTTP/1.1\r\nHost: x\r\n${huge}\r\n`, status: 401 },
    { name: '404 for an unknown path', head: `POST /v1/nothing HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n${huge}\r\n`, status: 404 },
    { name: '405 for another method', head: `DELETE /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n${huge}\r\n`, status: 405 },
    { name: '415 for a body of another type', head: `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: text/plain\r\n${huge}\r\n`, status: 415 },
  ];
  for (const c of early) {
    test(`an early answer to a body of 100 GB is not followed by reading it: ${c.name}, then a close`, async () => {
      await withServer(async (srv) => {
        const r = await streamBody(portOf(srv.url), c.head, false, 8000);
        assert.ok(r.closed, `the server was still reading after 8 s (${(r.sent / 2 ** 20).toFixed(0)} MiB sent)`);
        const [answer] = r.responses;
        assert.ok(answer, 'no answer before the close');
        assert.equal(answer.status, c.status);
        assert.equal(header(answer, 'connection'), 'close');
        assert.equal(errorBodyProblem(answer), undefined);
        assert.ok(isAlive(srv.proc.pid ?? 0));
      });
    });
  }

  // A client busy sending reads its answer late: the close must not become a reset before it
  // has (past the 8 MiB a server drops, reached within milliseconds here, it stops reading
  // and lets the client's TCP window hold it; the close comes seconds later).
  const busy = [
    { name: 'an announced body of 100 GB, 404', head: `POST /v1/nothing HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n${huge}\r\n`, chunked: false, status: 404 },
    { name: 'an endless chunked body, 401', head: 'GET /v1/pets HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n', chunked: true, status: 401 },
  ];
  for (const c of busy) {
    test(`an early answer read 300 ms late by a client still sending (${c.name}): the answer is there, then a close`, async () => {
      await withServer(async (srv) => {
        for (let i = 0; i < 3; i++) {
          const got = await new Promise<{ text: string; sent: number }>((resolve) => {
            const socket = net.connect(portOf(srv.url), '127.0.0.1');
            const piece = Buffer.alloc(64 * 1024, 'a');
            const frame = c.chunked ? Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n')]) : piece;
            let text = '';
            let sent = 0;
            let done = false;
            const finish = (): void => {
              if (done) return;
              done = true;
              clearTimeout(timer);
              socket.destroy();
              resolve({ text, sent });
            };
            const timer = setTimeout(finish, 8000);
            socket.on('data', (d: Buffer) => { text += d.toString('latin1'); });
            socket.on('error', finish); // EPIPE or ECONNRESET: whatever was read by then is all there is
            socket.on('close', finish);
            socket.once('connect', () => {
              socket.pause(); // busy: nothing read for 300 ms
              socket.write(c.head);
              const pump = (): void => {
                while (!socket.destroyed) {
                  sent += frame.length;
                  if (!socket.write(frame)) {
                    socket.once('drain', pump);
                    return;
                  }
                }
              };
              pump();
              setTimeout(() => socket.resume(), 300);
            });
          });
          assert.match(got.text, new RegExp(`^HTTP/1\\.1 ${c.status} `), `round ${i}: no answer read (${(got.sent / 2 ** 20).toFixed(0)} MiB sent)`);
        }
        assert.ok(isAlive(srv.proc.pid ?? 0));
      });
    });
  }

  test('an early answer to an endless chunked body: discarded up to 8 MiB, then the connection is closed', async () => {
    await withServer(async (srv) => {
      const r = await streamBody(portOf(srv.url), 'GET /v1/pets HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n', true, 8000);
      assert.ok(r.closed, `the server was still reading after 8 s (${(r.sent / 2 ** 20).toFixed(0)} MiB sent)`);
      assert.equal(r.responses[0]?.status, 401);
      assert.ok(r.sent > DRAIN_CAP, `closed after only ${r.sent} bytes: the answer should come with a drain up to the cap`);
    });
  });

  test('maxConnections: past it new connections are closed at once; below it again, they are served', async () => {
    await withServer(async (srv) => {
      const port = portOf(srv.url);
      const held = await Promise.all(Array.from({ length: 10 }, async () => {
        const socket = await connect(port);
        const r = responsesOf(socket);
        socket.write(`GET /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n\r\n`);
        return { socket, r };
      }));
      try {
        while (held.some((h) => h.r.list.length === 0)) await sleep(20);
        // The eleventh is closed without an answer.
        const extra = await connect(port);
        const r = responsesOf(extra);
        extra.write(`GET /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n\r\n`);
        const ended = await Promise.race([r.ended.then(() => true), sleep(3000).then(() => false)]);
        assert.ok(ended, 'the connection past maxConnections is still open');
        assert.equal(r.list.length, 0);
        extra.destroy();
        for (const h of held.splice(0, 3)) h.socket.destroy();
        await sleep(200);
        const res = await call(`${srv.url}/pets`, { key });
        assert.equal(res.status, 200);
      } finally {
        for (const h of held) h.socket.destroy();
      }
    }, { maxConnections: 10 });
  });

  test('maxPendingBodyBytes: unfinished bodies past the bound get 503 with Retry-After; a closed connection gives its bytes back', async () => {
    await withServer(async (srv) => {
      const port = portOf(srv.url);
      const body = `{"name":"${'a'.repeat(49_990)}`; // 50,000 bytes of a 60,000-byte body
      const held = await Promise.all(Array.from({ length: 8 }, async () => {
        const socket = await connect(port);
        const r = responsesOf(socket);
        socket.write(`POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 60000\r\n\r\n${body}`);
        return { socket, r };
      }));
      try {
        await sleep(1000);
        const answered = held.filter((h) => h.r.list.length > 0);
        // 200,000 bytes hold at most four of these bodies: the others are refused, not held.
        assert.ok(answered.length >= 4, `${answered.length} of 8 answered`);
        for (const h of answered) {
          const [answer] = h.r.list;
          assert.ok(answer);
          assert.equal(answer.status, 503);
          assert.equal(errorCode(answer), 'service_unavailable');
          assert.equal(header(answer, 'retry-after'), '1');
        }
      } finally {
        for (const h of held) h.socket.destroy();
      }
      await sleep(300);
      // Nothing is held any more: three bodies of 50 KB at once are read to the end (400: the
      // name is too long), not refused.
      const results = await Promise.all(Array.from({ length: 3 }, () => call(`${srv.url}/pets`, {
        method: 'POST', key, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'n'.repeat(50_000), categoryId: 1 }),
      })));
      assert.deepEqual(results.map((r) => r.status), [400, 400, 400], results.map((r) => r.text).join('\n'));
    }, { maxPendingBodyBytes: 200_000, maxBodyBytes: 65_536 });
  });
});
