// A worker's line to the primary, over a stand-in IPC channel. node's process.send() returns
// false when the channel has a backlog (over 128 KiB unsent): the message is queued and will be
// delivered all the same, so it is not a send that failed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { WorkerPeers, type Channel, type WorkerMessage } from '../../src/cluster/index.js';

/** A channel with a backlog: every send is queued (and reported false, as node does). */
function backloggedChannel(): Channel & { sent: WorkerMessage[]; deliver(m: unknown): void } {
  const events = new EventEmitter();
  const sent: WorkerMessage[] = [];
  return {
    sent,
    connected: true,
    send: (m) => { sent.push(m); return false; },
    on: (event, fn) => events.on(event, fn),
    off: (event, fn) => events.off(event, fn),
    deliver: (m) => { events.emit('message', m); },
  };
}

test('a claim sent on a channel with a backlog waits for the primary\'s answer, and each request has its own id', async () => {
  const channel = backloggedChannel();
  const peers = new WorkerPeers(channel);
  const first = peers.claim('listPets arm-1', 1);
  const second = peers.claim('listPets arm-1', 1);
  const [a, b] = channel.sent as Array<Extract<WorkerMessage, { id: number }>>;
  assert.ok(a !== undefined && b !== undefined, 'both claims were sent');
  assert.notEqual(a.id, b.id, 'two requests in flight have two ids');
  // The primary grants the first and refuses the second.
  channel.deliver({ petstore: 'answers', id: a.id, payloads: [true] });
  channel.deliver({ petstore: 'answers', id: b.id, payloads: [false] });
  assert.deepEqual(await Promise.all([first, second]), [true, false]);
  peers.close();
});

test('askEvery names its wait and learns how many workers did not answer; an answer that is a promise is sent once it settles', async () => {
  const channel = backloggedChannel();
  const peers = new WorkerPeers(channel);
  const asked = peers.askEvery('clock-reset', undefined, 5_000);
  const sent = channel.sent[0] as Extract<WorkerMessage, { petstore: 'ask' }>;
  assert.equal(sent.timeoutMs, 5_000);
  channel.deliver({ petstore: 'answers', id: sent.id, payloads: [true], missing: 1 });
  assert.deepEqual(await asked, { answers: [true], missing: 1 });

  let finish: (v: unknown) => void = () => undefined;
  peers.answer('limits-reset', () => new Promise((resolve) => { finish = resolve; }));
  channel.deliver({ petstore: 'asked', id: 7, what: 'limits-reset', payload: undefined });
  assert.equal(channel.sent.length, 1, 'not answered before the work is done');
  finish(true);
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(channel.sent[1], { petstore: 'answer', id: 7, payload: true });
  peers.close();
});
