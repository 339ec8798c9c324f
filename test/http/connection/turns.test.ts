// Fair turns, checked without a network: per connection at most PER_TURN requests handled per
// turn of the event loop, in the order sent, the rest waiting with the connection unread; a
// connection with nothing waiting is served at once; MAX_OUTSTANDING unanswered requests stop
// a connection until half of them are answered; a closed connection's queue is dropped.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { IncomingMessage, ServerResponse, createServer } from 'node:http';
import { Socket, type AddressInfo } from 'node:net';
import { MAX_OUTSTANDING, takeTurns } from '../../../src/http/connection/turns.js';
import { MAX_OUTSTANDING_TOTAL, MAX_QUEUED, NEAR_MAX_QUEUED, NEW_PER_TURN, PER_TURN } from '../../../src/http/connection/bounds.js';
import { FakeSocket, request, turns, type FakeResponse } from './fakes.js';

/** A takeTurns listener recording what it handled (by url), keeping each response to answer later. */
function recorder(): { listener: (req: IncomingMessage, res: ServerResponse) => void; handled: string[]; pending: FakeResponse[] } {
  const handled: string[] = [];
  const pending: FakeResponse[] = [];
  const listener = takeTurns((req, res) => {
    handled.push(req.url ?? '');
    pending.push(res as unknown as FakeResponse);
  });
  return { listener, handled, pending };
}

test('a pipelining connection gets PER_TURN requests a turn, in order; another connection is served at once', async () => {
  const { listener, handled, pending } = recorder();
  const a = new FakeSocket();
  const b = new FakeSocket();
  // What one read of each connection brings, handed over in the same turn.
  for (let i = 1; i <= 10; i++) listener(...request(a, 'GET', `a${i}`));
  listener(...request(b, 'GET', 'b1'));
  assert.equal(PER_TURN, 4);
  assert.deepEqual(handled, ['a1', 'a2', 'a3', 'a4', 'b1'], 'the first PER_TURN at once, then the other connection');
  assert.equal(a._paused && a.paused, true, 'the connection with requests waiting is not read');
  assert.equal(b.paused, false);
  // Answers going out do not let a connection skip the line.
  for (const res of pending.splice(0)) res.answered();
  await turns(1);
  assert.deepEqual(handled.slice(5), ['a5', 'a6', 'a7', 'a8']);
  await turns(1);
  assert.deepEqual(handled.slice(9), ['a9', 'a10']);
  assert.equal(a._paused, false, 'read again once nothing waits');
  assert.equal(a.paused, false);
});

test('while requests wait, node resuming the connection does not let it be read', async () => {
  const { listener } = recorder();
  const a = new FakeSocket();
  for (let i = 1; i <= 6; i++) listener(...request(a, 'GET', `a${i}`));
  // What node does once its own backlog of answers has drained.
  a._paused = false;
  a.resume();
  assert.equal(a._paused && a.paused, true, "the 'resume' listener holds it again");
  await turns(2);
});

test('MAX_OUTSTANDING unanswered requests stop a connection until half are answered', async () => {
  const { listener, handled, pending } = recorder();
  const a = new FakeSocket();
  const sent = MAX_OUTSTANDING + 20;
  for (let i = 1; i <= sent; i++) listener(...request(a, 'GET', `a${i}`));
  await turns(sent / PER_TURN + 5);
  assert.equal(handled.length, MAX_OUTSTANDING, 'no more handled while MAX_OUTSTANDING are unanswered');
  assert.equal(a._paused, true);
  // Answers below half do not free it yet.
  for (let i = 0; i < MAX_OUTSTANDING / 2 - 1; i++) (pending[i] as FakeResponse).answered();
  await turns(3);
  assert.equal(handled.length, MAX_OUTSTANDING);
  (pending[MAX_OUTSTANDING / 2 - 1] as FakeResponse).answered();
  await turns(10);
  assert.equal(handled.length, sent, 'the rest is served once half are answered');
  assert.deepEqual(handled, Array.from({ length: sent }, (_, i) => `a${i + 1}`), 'in the order sent');
});

test("a closed connection's waiting requests are dropped, and its unanswered ones no longer count", async () => {
  const { listener, handled, pending } = recorder();
  const a = new FakeSocket();
  for (let i = 1; i <= 10; i++) listener(...request(a, 'GET', `a${i}`));
  assert.equal(handled.length, PER_TURN);
  a.destroy();
  await turns(5);
  assert.equal(handled.length, PER_TURN, 'nothing more of a closed connection is handled');
  // Their answers closing later change nothing.
  for (const res of pending) res.answered();
  // A request parsed after the close is not handled either.
  listener(...request(a, 'GET', 'late'));
  await turns(2);
  assert.equal(handled.length, PER_TURN);
});

test('over all connections at most MAX_OUTSTANDING_TOTAL wait for their answers, besides PER_TURN each; a client with one request is served at once; the others go on, in order, once the total falls', async () => {
  const { listener, handled, pending } = recorder();
  // 40 pipelining connections whose requests are never answered (a limiter whose replies are
  // slow to come): without the total's bound, each would have MAX_OUTSTANDING in flight.
  const flood = Array.from({ length: 40 }, () => new FakeSocket());
  const perConnection = MAX_OUTSTANDING - 4;
  for (const [c, s] of flood.entries()) for (let i = 1; i <= perConnection; i++) listener(...request(s, 'GET', `f${c}-${i}`));
  await turns(flood.length * perConnection / PER_TURN + 20);
  assert.ok(flood.length * perConnection > MAX_OUTSTANDING_TOTAL + PER_TURN * flood.length, 'the flood is larger than the bound');
  assert.ok(handled.length >= MAX_OUTSTANDING_TOTAL, `handled ${handled.length}`);
  assert.ok(handled.length < MAX_OUTSTANDING_TOTAL + PER_TURN * flood.length, `handled ${handled.length} while nothing was answered`);
  const stopped = flood.filter((s) => s._paused && s.paused);
  assert.ok(stopped.length > 0 && stopped.every((s) => s._paused), 'connections stopped by the total are not read');
  // A client with one request is served at once, whatever the others have in flight.
  const victim = new FakeSocket();
  listener(...request(victim, 'GET', 'victim'));
  assert.equal(handled.at(-1), 'victim');
  assert.equal(victim.paused, false);
  // Answers below three quarters of the bound let the others go on.
  const before = handled.length;
  for (const res of pending.splice(0, MAX_OUTSTANDING_TOTAL >> 1)) res.answered();
  await turns(flood.length);
  assert.ok(handled.length > before, 'served again once the total fell');
  // Everything is served in the end, each connection's requests in the order sent.
  for (let round = 0; round < 200 && handled.length < flood.length * perConnection + 1; round++) {
    for (const res of pending.splice(0)) res.answered();
    await turns(2);
  }
  assert.equal(handled.length, flood.length * perConnection + 1);
  for (const [c] of flood.entries()) {
    const own = handled.filter((u) => u.startsWith(`f${c}-`));
    assert.deepEqual(own, Array.from({ length: perConnection }, (_, i) => `f${c}-${i + 1}`));
  }
  for (const s of flood) assert.equal(s._paused, false, 'read again once nothing holds it');
});

/** Fills the queue over all connections to `total` requests: connections that pipeline, never answered. */
function fill(listener: (req: IncomingMessage, res: ServerResponse) => void, total: number): FakeSocket[] {
  const sockets: FakeSocket[] = [];
  for (let n = 0; n < total;) {
    const s = new FakeSocket();
    sockets.push(s);
    for (let i = 0; i < 1000 && n < total; i++, n++) listener(...request(s, 'GET', `fill${sockets.length}-${i}`));
  }
  return sockets;
}

test('near MAX_QUEUED, the requests of a large read wait for their turn: a connection closed at the cap has none of them in flight', async () => {
  const { listener, handled } = recorder();
  fill(listener, MAX_QUEUED - 300);
  const before = handled.length;
  // One read of a pipelining client: node has read it whole (socket.bytesRead) before the
  // first of its requests comes. Handled at once, its first requests would wait on Redis and
  // keep everything node parsed from the read alive after the connection is closed.
  const flood = new FakeSocket() as FakeSocket & { bytesRead: number };
  flood.bytesRead = 40_000;
  for (let i = 1; i <= 1000 && !flood.destroyed; i++) listener(...request(flood, 'GET', `flood${i}`));
  assert.equal(flood.destroyed, true, 'closed at the cap');
  assert.equal(handled.length, before, 'none of its requests was handed on');
  assert.ok(!handled.some((u) => u.startsWith('flood')));
  // A client sending one request at a time is still served at once, however full the queue.
  const victim = new FakeSocket() as FakeSocket & { bytesRead: number };
  victim.bytesRead = 120;
  listener(...request(victim, 'GET', 'victim'));
  assert.equal(handled.at(-1), 'victim');
  await turns(2);
});

test('new connections: NEW_PER_TURN start being read a turn, one a turn while half the cap waits; newest first', async () => {
  const { listener } = recorder();
  const admit = (listener as unknown as { admit: (s: unknown) => void }).admit;
  assert.equal(typeof admit, 'function');
  // A burst of new connections accepted at once: none is read before the next turn (node would
  // read them all in its next poll, one whole read each).
  const burst = Array.from({ length: 10 }, () => new FakeSocket());
  for (const s of burst) admit(s);
  assert.ok(burst.every((s) => s._paused && s.paused), 'held until the next turn');
  await turns(1);
  assert.deepEqual(burst.map((s) => !s.paused), [false, false, false, false, false, false, true, true, true, true], 'NEW_PER_TURN, the newest first');
  await turns(1);
  assert.equal(burst.filter((s) => !s.paused).length, 2 * NEW_PER_TURN);
  await turns(1);
  assert.equal(burst.filter((s) => !s.paused).length, burst.length);

  // Half the cap waiting: one new connection a turn, the newest first.
  fill(listener, NEAR_MAX_QUEUED);
  await turns(1);
  const later = Array.from({ length: 3 }, () => new FakeSocket());
  for (const s of later) admit(s);
  assert.ok(later.every((s) => s._paused && s.paused));
  await turns(1);
  assert.deepEqual(later.map((s) => !s.paused), [false, false, true], 'one a turn, the newest');
  await turns(1);
  assert.deepEqual(later.map((s) => !s.paused), [false, true, true]);
  await turns(1);
  assert.ok(later.every((s) => !s.paused));
});

test('an answer the socket took whole does not count; one with bytes still to write counts until its close', async () => {
  // Ended at once with nothing left: MAX_OUTSTANDING + 20 requests are all served, unanswered by any close.
  const a = new FakeSocket();
  let served = 0;
  const counting = takeTurns((req, res) => {
    served++;
    (res as unknown as FakeResponse).ended(0);
  });
  for (let i = 1; i <= MAX_OUTSTANDING + 20; i++) counting(...request(a, 'GET', `a${i}`));
  await turns((MAX_OUTSTANDING + 20) / PER_TURN + 5);
  assert.equal(served, MAX_OUTSTANDING + 20);
  assert.equal(a._paused, false);
  // Ended with bytes the socket has not taken: each counts, and the connection stops at MAX_OUTSTANDING.
  const b = new FakeSocket();
  const pending: FakeResponse[] = [];
  const slow = takeTurns((_req, res) => {
    const r = res as unknown as FakeResponse;
    r.ended(100);
    pending.push(r);
  });
  for (let i = 1; i <= MAX_OUTSTANDING + 20; i++) slow(...request(b, 'GET', `b${i}`));
  await turns((MAX_OUTSTANDING + 20) / PER_TURN + 5);
  assert.equal(pending.length, MAX_OUTSTANDING);
  assert.equal(b._paused, true);
  for (const res of pending.splice(0)) res.answered();
  await turns(10);
  assert.equal(pending.length, 20, 'the rest is served once they are answered');
});

test(`node ${process.version}: a small answer ended at once has gone out when the listener returns (no 'close' listener is added)`, async () => {
  let closeListeners = -1;
  const turnsListener = takeTurns((_req, res) => {
    res.end('{"ok":true}');
  });
  const server = createServer((req, res) => {
    turnsListener(req, res);
    closeListeners = res.listenerCount('close');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const before = new ServerResponse(new IncomingMessage(new Socket())).listenerCount('close');
    const answer = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
    assert.equal(await answer.text(), '{"ok":true}');
    assert.equal(closeListeners, before, 'the answer was counted as not yet out');
  } finally {
    server.closeAllConnections();
    server.close();
  }
});
