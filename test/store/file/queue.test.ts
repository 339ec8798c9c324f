// The file store's write queue is bounded (maxQueuedWrites): past it a create is refused at
// once with 503 service_unavailable and Retry-After, nothing stored, instead of memory
// growing with a disk slower than its clients.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { parseConfig } from '../../../src/config/index.js';
import { openFileStore, StoreBusyError, StoreUnavailableError } from '../../../src/store/index.js';
import { KEYS, call, startBundle, tempDir, testConfig, writeConfig } from '../../support/bundle.js';
import net from 'node:net';
import { ResponseParser, errorCode, header, portOf, type RawResponse } from '../../support/wire.js';
import { silentLogger } from '../../../src/core/index.js';

/** Connects one socket per request, then writes them all in one turn; the first answer of each. */
async function allAtOnce(port: number, requests: readonly string[]): Promise<RawResponse[]> {
  const sockets = await Promise.all(requests.map(() => new Promise<net.Socket>((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => resolve(socket));
    socket.once('error', reject);
  })));
  const answers = sockets.map((socket) => new Promise<RawResponse>((resolve, reject) => {
    const parser = new ResponseParser();
    const got: RawResponse[] = [];
    socket.on('data', (d: Buffer) => got.push(...parser.push(d)));
    socket.once('close', () => (got[0] ? resolve(got[0]) : reject(new Error('closed without an answer'))));
  }));
  sockets.forEach((socket, i) => socket.write(requests[i] as string));
  return Promise.all(answers);
}

test('file store: writes past maxQueuedWrites are refused at once, the others stored', async (t) => {
  const dir = tempDir();
  const file = join(dir, 'pets.json');
  let store = await openFileStore(file, { logger: silentLogger, maxQueuedWrites: 3 });
  // All in one turn: none has been taken by the writer yet.
  const results = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => store.create({ name: `p${i}`, categoryId: 1 })));
  const stored = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value.pet.name] : []));
  assert.deepEqual(stored, ['p0', 'p1', 'p2']);
  for (const r of results.slice(3)) {
    assert.ok(r.status === 'rejected' && r.reason instanceof StoreBusyError && r.reason instanceof StoreUnavailableError);
  }
  // Once the batch is taken, the queue has room again.
  assert.equal((await store.create({ name: 'later', categoryId: 1 })).pet.id, 4);
  await store.close();
  store = await openFileStore(file, { logger: silentLogger });
  assert.equal(store.count, 4);
  await store.close();
});

test('config: maxQueuedWrites defaults to 10000 and must be a positive integer', () => {
  assert.equal(parseConfig({}, 'test', '/').maxQueuedWrites, 10_000);
  assert.equal(parseConfig({ maxQueuedWrites: 5 }, 'test', '/').maxQueuedWrites, 5);
  for (const bad of [0, -1, 1.5, '10']) assert.throws(() => parseConfig({ maxQueuedWrites: bad }, 'test', '/'), /maxQueuedWrites must be a positive integer/);
});

test('a full write queue answers 503 service_unavailable with Retry-After, and stores nothing of it', async (t) => {
  const dir = tempDir();
  const app = await startBundle(['--config', writeConfig(dir, testConfig({ maxQueuedWrites: 1 })), '--data', join(dir, 'pets.json')]);
  t.after(() => app.stop());
  // Creates on 20 connections, all written in one go: one waits for the disk, the queue is
  // then full. (Pipelined on one connection they would be handled one after the other.)
  const body = '{"name":"queued","categoryId":1}';
  const one = `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${KEYS.enterprise}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`;
  const creates = await allAtOnce(portOf(app.url), Array.from({ length: 20 }, () => one));
  assert.equal(creates.length, 20);
  const busy = creates.filter((x) => x.status === 503);
  assert.ok(busy.length > 0, `statuses: ${creates.map((x) => x.status).join(' ')}`);
  for (const x of busy) {
    assert.equal(errorCode(x), 'service_unavailable');
    assert.match(header(x, 'retry-after') ?? '', /^[1-9][0-9]*$/);
  }
  const created = creates.filter((x) => x.status === 201).length;
  assert.equal(created + busy.length, 20);
  const list = await call(`${app.url}/pets?limit=100`, { key: KEYS.enterprise });
  assert.equal((list.json as unknown[]).length, created, 'only the 201s are stored');
  // Refusals under overload are counted in one line a second, not logged one by one.
  const lines = app.stdout().split('\n').filter((l) => l.includes('store write queue full') || l.includes('"store unavailable"'));
  assert.equal(lines.length, 1, lines.join('\n'));
  assert.match(lines[0] ?? '', /"level":40,.*"refused":1\b/);
});
