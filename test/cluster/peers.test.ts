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
