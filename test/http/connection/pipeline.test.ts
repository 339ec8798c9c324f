// Order behind non-safe requests, checked without a network: a request pipelined behind a
// POST waits for the POST's answer; one behind an answer after which the connection closes is
// never handled; safe requests pass straight through, unless the listener asks for one at a
// time (a test harness that may break a connection).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { OrderedListener } from '../../../src/http/connection/index.js';
import { orderPipelined } from '../../../src/http/connection/pipeline.js';
import { FakeSocket, request, type FakeResponse } from './fakes.js';

function recorder(oneAtATime?: () => boolean): { listener: (req: IncomingMessage, res: ServerResponse) => void; handled: string[]; pending: Map<string, FakeResponse> } {
  const handled: string[] = [];
  const pending = new Map<string, FakeResponse>();
  const inner = ((req: IncomingMessage, res: ServerResponse) => {
    handled.push(req.url ?? '');
    pending.set(req.url ?? '', res as unknown as FakeResponse);
  }) as OrderedListener;
  const listener = orderPipelined(oneAtATime === undefined ? inner : Object.assign(inner, { oneAtATime }));
  return { listener, handled, pending };
}

test('safe requests pass straight through; requests behind a POST wait for its answer, in order', () => {
  const { listener, handled, pending } = recorder();
  const s = new FakeSocket();
  listener(...request(s, 'GET', 'g1'));
  listener(...request(s, 'HEAD', 'h1'));
  listener(...request(s, 'POST', 'p1'));
  listener(...request(s, 'GET', 'g2'));
  listener(...request(s, 'POST', 'p2'));
  listener(...request(s, 'GET', 'g3'));
  assert.deepEqual(handled, ['g1', 'h1', 'p1']);
  assert.equal(s._paused, true, 'a connection holding requests is not read');
  pending.get('p1')?.answered();
  assert.deepEqual(handled, ['g1', 'h1', 'p1', 'g2', 'p2'], 'up to the next POST, which holds the rest');
  assert.equal(s._paused, true);
  pending.get('p2')?.answered();
  assert.deepEqual(handled, ['g1', 'h1', 'p1', 'g2', 'p2', 'g3']);
  assert.equal(s._paused, false, 'read again once nothing is held');
  // Another connection is never held by this one's POST.
  const other = new FakeSocket();
  listener(...request(s, 'POST', 'p3'));
  listener(...request(other, 'GET', 'o1'));
  assert.deepEqual(handled.slice(-2), ['p3', 'o1']);
});

test('requests behind an answer after which the connection closes are never handled', () => {
  const { listener, handled, pending } = recorder();
  const s = new FakeSocket();
  listener(...request(s, 'POST', 'p1'));
  listener(...request(s, 'POST', 'create-behind'));
  // The answer said Connection: close: node ended the socket's writable side after it.
  s.writable = false;
  s.writableEnded = true;
  pending.get('p1')?.answered();
  assert.deepEqual(handled, ['p1']);
  // Parsed later from what the client still sent: not handled either.
  listener(...request(s, 'POST', 'later'));
  assert.deepEqual(handled, ['p1']);
});

test('one at a time: a request behind a GET waits for it, and is dropped when the GET broke the connection', () => {
  let armed = true;
  const { listener, handled, pending } = recorder(() => armed);
  const s = new FakeSocket();
  listener(...request(s, 'GET', 'g1'));
  listener(...request(s, 'POST', 'create-behind'));
  assert.deepEqual(handled, ['g1'], 'the create waits for the GET');
  s.destroy();
  pending.get('g1')?.answered();
  assert.deepEqual(handled, ['g1'], 'behind a broken connection nothing is handled');
  // Answered normally, the next one runs.
  const t = new FakeSocket();
  listener(...request(t, 'GET', 'g2'));
  listener(...request(t, 'GET', 'g3'));
  assert.deepEqual(handled, ['g1', 'g2']);
  pending.get('g2')?.answered();
  assert.deepEqual(handled, ['g1', 'g2', 'g3']);
  // Disarmed: safe requests pass straight through again.
  armed = false;
  const u = new FakeSocket();
  listener(...request(u, 'GET', 'g4'));
  listener(...request(u, 'GET', 'g5'));
  assert.deepEqual(handled.slice(-2), ['g4', 'g5']);
});
