// node:http's private state that src/http/node-internals.ts relies on, checked on the Node
// this runs on: when a release changes any of it, this fails and names what changed, before
// the pipelining and slow-client tests fail in less obvious ways.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { connect, Socket, type AddressInfo } from 'node:net';
import {
  answerAfterHalfClose, answerInFlight, answersAfterHalfClose, cheapAbortOnClose, closesAfterHalfClose, holdReading, onCloseAfterAnswer, readingHeld, releaseReading,
} from '../../../src/http/connection/node-internals.js';

/** Serves one raw request and hands `inspect` the server side of it. */
async function withRequest(text: string, inspect: (req: IncomingMessage, res: ServerResponse) => void | Promise<void>): Promise<string> {
  let failure: unknown;
  const server = createServer((req, res) => {
    Promise.resolve(inspect(req, res)).catch((err: unknown) => {
      failure = err;
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const answer = await new Promise<string>((resolve, reject) => {
      const c = connect((server.address() as AddressInfo).port, '127.0.0.1');
      let got = '';
      c.setEncoding('latin1');
      c.on('data', (d: string) => (got += d));
      c.on('close', () => resolve(got));
      c.on('error', reject);
      c.write(text);
    });
    if (failure !== undefined) throw failure;
    return answer;
  } finally {
    server.closeAllConnections();
    server.close();
  }
}

test(`node ${process.version}: socket._paused is node:http's flag, and its 'resume' listener honours it`, async () => {
  await withRequest('GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', async (req, res) => {
    const socket = req.socket as Socket & { _paused?: unknown; parser?: { resume?: unknown } | null };
    assert.equal(typeof socket._paused, 'boolean', 'socket._paused is no longer a boolean on node:http sockets');
    assert.equal(socket._paused, false);
    assert.equal(typeof socket.parser?.resume, 'function', 'socket.parser.resume() is gone');
    assert.equal(readingHeld(socket), false);
    holdReading(socket);
    assert.equal(readingHeld(socket), true);
    // What node itself does once its backlog drains, minus clearing the flag: the socket must stay paused.
    socket.resume();
    await new Promise((r) => setImmediate(r));
    assert.equal(socket.isPaused(), true, "node:http's 'resume' listener no longer pauses again while _paused is set");
    releaseReading(socket);
    await new Promise((r) => setImmediate(r));
    assert.equal(readingHeld(socket), false);
    assert.equal(socket.isPaused(), false, 'releaseReading did not resume the socket');
    res.end('ok');
  });
});

test(`node ${process.version}: a Connection: close answer closes its socket through socket.destroySoon()`, async () => {
  let called = 0;
  const answer = await withRequest('GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', (req, res) => {
    assert.equal(typeof Socket.prototype.destroySoon, 'function', 'net.Socket has no destroySoon() any more');
    const original = Socket.prototype.destroySoon;
    onCloseAfterAnswer(req.socket, function (this: Socket) {
      called++;
      original.call(this);
    });
    res.end('ok');
  });
  assert.match(answer, /^HTTP\/1\.1 200 OK/);
  assert.equal(called, 1, 'node:http no longer closes a Connection: close answer with socket.destroySoon()');
});

test(`node ${process.version}: a closed connection's unanswered requests are aborted within its 'close' listeners, cheaply`, async () => {
  const stacks: string[] = [];
  let sockets = 0;
  const limitBefore = Error.stackTraceLimit;
  const server = createServer((req) => {
    // Never answered: they are all still pending when the client goes away.
    if (sockets++ === 0) cheapAbortOnClose(req.socket);
    req.on('error', (err) => stacks.push(err.stack ?? ''));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const c = connect((server.address() as AddressInfo).port, '127.0.0.1');
    c.on('error', () => {});
    c.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(50));
    for (let i = 0; i < 200 && sockets < 50; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(sockets, 50);
    c.destroy();
    for (let i = 0; i < 200 && stacks.length < 50; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(stacks.length, 50, "node no longer destroys a closed connection's pending requests with an error");
    const withFrames = stacks.filter((s) => s.includes('\n    at '));
    assert.equal(withFrames.length, 0, `aborted requests still carry stack traces: ${withFrames[0]}`);
    assert.equal(Error.stackTraceLimit, limitBefore, 'the stack trace limit was not restored');
  } finally {
    server.closeAllConnections();
    server.close();
  }
});

/**
 * Sends `text` to a server answering each request 50 ms late, then FIN at once (half-close)
 * unless `halfClose` is false; resolves with everything received until the server closes,
 * and what closesAfterHalfClose said of each answer as it finished.
 */
async function lateAnswers(
  text: string, opts: { allow: boolean; halfClose?: boolean; connectionClose?: boolean },
): Promise<{ received: string; closing: boolean[]; defaultFlag: unknown }> {
  const closing: boolean[] = [];
  const server = createServer((_req, res) => {
    // Put before node's own 'finish' listener, which closes the connection after a last answer.
    res.prependOnceListener('finish', () => closing.push(closesAfterHalfClose(res)));
    if (opts.connectionClose === true) res.setHeader('Connection', 'close');
    setTimeout(() => res.end('late'), 50);
  });
  const defaultFlag = (server as unknown as { httpAllowHalfOpen?: unknown }).httpAllowHalfOpen;
  if (opts.allow) answerAfterHalfClose(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const received = await new Promise<string>((resolve, reject) => {
      const c = connect((server.address() as AddressInfo).port, '127.0.0.1');
      let got = '';
      c.setEncoding('latin1');
      c.on('data', (d: string) => {
        got += d;
        // Without a half-close nobody closes: the test does, once both answers are in.
        if (opts.halfClose === false && got.split('late').length === 3) c.destroy();
      });
      c.on('close', () => resolve(got));
      c.on('error', reject);
      if (opts.halfClose === false) c.write(text);
      else c.end(text);
    });
    return { received, closing, defaultFlag };
  } finally {
    server.closeAllConnections();
    server.close();
  }
}

const TWO_GETS = 'GET /1 HTTP/1.1\r\nHost: x\r\n\r\nGET /2 HTTP/1.1\r\nHost: x\r\n\r\n';

test(`node ${process.version}: server.httpAllowHalfOpen decides whether what a client sent before it half-closed is answered`, async () => {
  const off = await lateAnswers(TWO_GETS, { allow: false });
  assert.equal(off.defaultFlag, false, 'node:http has no server.httpAllowHalfOpen (default false) any more');
  assert.equal(off.received, '', 'without the flag node no longer drops the answers after a half-close (the flag may not be needed)');
  const on = await lateAnswers(TWO_GETS, { allow: true });
  assert.equal(on.received.match(/HTTP\/1\.1 200 OK/g)?.length, 2, `with server.httpAllowHalfOpen set, node no longer answers after a half-close: ${JSON.stringify(on.received)}`);
  assert.match(on.received, /late$/, 'the connection was not closed right after the last answer');
  const server = createServer();
  answerAfterHalfClose(server);
  assert.equal(answersAfterHalfClose(server), true);
  assert.equal(answersAfterHalfClose(createServer()), false);
});

test(`node ${process.version}: after a half-close node marks the connection's last answer with res._last, and closes after it`, async () => {
  const halfClosed = await lateAnswers(TWO_GETS, { allow: true });
  assert.deepEqual(halfClosed.closing, [false, true], 'res._last (with res._header) no longer marks the last answer before node closes a half-closed connection');
  const open = await lateAnswers(TWO_GETS, { allow: true, halfClose: false });
  assert.deepEqual(open.closing, [false, false], 'an answer on an open keep-alive connection is taken for the last');
  const closeAnswer = await lateAnswers(TWO_GETS, { allow: true, connectionClose: true });
  assert.deepEqual(closeAnswer.closing, [false], 'a Connection: close answer is taken for a half-close');
});

test(`node ${process.version}: socket._httpMessage is the answer being written, then the next pipelined one`, async () => {
  const seen: Array<[number, boolean, boolean]> = [];
  const responses: ServerResponse[] = [];
  const server = createServer((req, res) => {
    responses.push(res);
    // Both are parsed from one read; the first is answered late, the second at once (queued by node behind the first).
    if (req.url === '/1') {
      setTimeout(() => {
        seen.push([1, answerInFlight(req.socket) === res, answerInFlight(req.socket) !== undefined]);
        res.once('finish', () => seen.push([2, answerInFlight(req.socket) === responses[1], answerInFlight(req.socket) !== undefined]));
        res.end('one');
      }, 50);
    } else {
      res.end('two');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    await new Promise<void>((resolve, reject) => {
      const c = connect((server.address() as AddressInfo).port, '127.0.0.1');
      let got = '';
      c.setEncoding('latin1');
      c.on('data', (d: string) => {
        got += d;
        if (got.includes('two')) c.destroy();
      });
      c.on('close', () => resolve());
      c.on('error', reject);
      c.write(TWO_GETS);
    });
    assert.equal(responses.length, 2);
    assert.deepEqual(seen[0], [1, true, true], 'socket._httpMessage is not the answer node is writing');
    assert.deepEqual(seen[1], [2, true, true], "after an answer's 'finish', socket._httpMessage is not the next queued answer");
  } finally {
    server.closeAllConnections();
    server.close();
  }
});
