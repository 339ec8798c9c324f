// Holding requests pipelined behind a POST (pipeline.ts) must not undo node's backpressure:
// a connection that sends POSTs among its GETs and never reads its answers, or that floods
// GETs behind a POST that takes its time, must not make the server read (and keep) all it
// sends. And a client that pipelines and does read its answers gets every one, in order.
// Raw sockets against the built bundle, with a data file, so that every create waits for the disk.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { join } from 'node:path';
import { KEYS, call, startBundle, tempDir, testConfig, writeConfig, type Running } from '../support/bundle.js';
import { PipelinedConnection, ResponseParser, portOf, rssKiB, sleep, type RawResponse } from '../support/wire.js';

const key = KEYS.enterprise;
const ADMIN_KEY = 'admin-key-for-pipelining-tests';
const AUTH = `Host: x\r\nAuthorization: Bearer ${key}\r\n`;
const MiB = 1024 * 1024;
/** A server that keeps reading would take all of it within seconds; one that stops, a few MiB (the kernel's buffers). */
const FLOOD_CAP = 96 * MiB;
const ACCEPTED_AT_MOST = 32 * MiB;

function create(name: string, padding = 0): string {
  // Whitespace in the JSON makes a long body without a long name.
  const body = `{"name":${JSON.stringify(name)},${' '.repeat(padding)}"categoryId":1}`;
  return `POST /v1/pets HTTP/1.1\r\n${AUTH}Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

function get(path: string): string {
  return `GET /v1${path} HTTP/1.1\r\n${AUTH}\r\n`;
}

function open(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('error', reject);
    socket.once('connect', () => {
      socket.off('error', reject);
      socket.on('error', () => undefined);
      resolve(socket);
    });
  });
}

/**
 * Writes `block` again and again, as fast as the connection takes it, until FLOOD_CAP bytes
 * are sent or the connection has taken nothing for `stallMs`. Returns the blocks sent (each
 * one whole: a write the server has not taken yet still counts, as the kernel holds it).
 */
async function floodUntilStalled(socket: net.Socket, block: Buffer, stallMs: number): Promise<number> {
  let blocks = 0;
  while (blocks * block.length < FLOOD_CAP) {
    blocks++;
    if (socket.write(block)) continue;
    const drained = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => {
        socket.off('drain', onDrain);
        resolve(false);
      }, stallMs);
      const onDrain = (): void => {
        clearTimeout(timer);
        resolve(true);
      };
      socket.once('drain', onDrain);
    });
    if (!drained) break;
  }
  return blocks;
}

async function start(dir: string): Promise<Running> {
  const config = writeConfig(dir, testConfig({ admin: { key: ADMIN_KEY } }));
  return startBundle(['--config', config, '--data', join(dir, 'pets.json')], { cwd: dir });
}

test('POSTs among pipelined GETs, answers never read: the server stops reading the connection', async (t) => {
  const dir = tempDir();
  const srv = await start(dir);
  try {
    const pid = srv.proc.pid as number;
    const before = rssKiB(pid);
    const socket = await open(portOf(srv.url));
    const block = Buffer.from(create('flood') + get('/pets?limit=100').repeat(500));
    const blocks = await floodUntilStalled(socket, block, 1_500);
    const sent = blocks * block.length;
    const grown = (rssKiB(pid) - before) / 1024;
    t.diagnostic(`sent ${(sent / MiB).toFixed(1)} MiB before the connection stalled; server RSS +${grown.toFixed(0)} MiB`);
    assert.ok(sent < ACCEPTED_AT_MOST, `the server took ${(sent / MiB).toFixed(0)} MiB of requests from a client that reads nothing`);
    assert.ok(grown < 200, `server RSS grew by ${grown.toFixed(0)} MiB`);
    // Everyone else is served meanwhile.
    assert.equal((await call(`${srv.url}/pets?limit=1`, { key })).status, 200);
    socket.destroy();
  } finally {
    assert.equal(await srv.stop(), 0, srv.stderr());
  }
});

test('GETs pipelined behind a POST that takes its time: read no further, then every answer in order', async (t) => {
  const dir = tempDir();
  const srv = await start(dir);
  try {
    const pid = srv.proc.pid as number;
    const fault = await fetch(srv.url.replace(/\/v1$/, '/__admin/faults'), {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ operation: 'createPet', delayMs: 4_000, count: 1 }),
    });
    assert.equal(fault.status, 200);
    const before = rssKiB(pid);
    const socket = await open(portOf(srv.url));
    const parser = new ResponseParser();
    const responses: RawResponse[] = [];
    // Nothing is read until the flood has stalled: the server's answers wait in the buffers.
    socket.pause();
    socket.on('data', (chunk: Buffer) => responses.push(...parser.push(chunk)));
    socket.write(create('slow'));
    const perBlock = 200;
    const blocks = await floodUntilStalled(socket, Buffer.from(get('/pets/1').repeat(perBlock)), 1_000);
    const sent = blocks * perBlock * Buffer.byteLength(get('/pets/1'));
    const grown = (rssKiB(pid) - before) / 1024;
    t.diagnostic(`${blocks * perBlock} GETs (${(sent / MiB).toFixed(1)} MiB) sent behind the held POST before the connection stalled; server RSS +${grown.toFixed(0)} MiB`);
    assert.ok(sent < ACCEPTED_AT_MOST, `the server took ${(sent / MiB).toFixed(0)} MiB of requests behind a held POST`);
    assert.ok(grown < 200, `server RSS grew by ${grown.toFixed(0)} MiB`);

    // The POST ends; the client reads: nothing was lost, nothing deadlocked, all in order.
    socket.resume();
    const expected = 1 + blocks * perBlock;
    for (let waited = 0; responses.length < expected && waited < 60_000; waited += 50) await sleep(50);
    socket.destroy();
    assert.equal(responses.length, expected, 'every pipelined request was answered');
    assert.equal(responses[0]?.status, 201);
    const wrong = responses.slice(1).filter((r) => r.status !== 200 || (JSON.parse(r.body.toString()) as { name: string }).name !== 'slow');
    assert.equal(wrong.length, 0, `GETs behind the create that did not find it: ${wrong.length}, first ${wrong[0]?.status} ${wrong[0]?.body.toString()}`);
  } finally {
    assert.equal(await srv.stop(), 0, srv.stderr());
  }
});

test('a client that pipelines and reads: creates with long bodies among thousands of GETs, every answer in order', async () => {
  const dir = tempDir();
  const srv = await start(dir);
  try {
    const conn = await PipelinedConnection.open(portOf(srv.url));
    // Windows of 3,000 requests (several reads of the server's), a create every 250th; every
    // third create's body is 20 KiB, so that it may be cut between two reads.
    let created = 0;
    const kinds: string[] = [];
    const make = (i: number): string => {
      if (i % 250 === 0) {
        created++;
        kinds.push(`create ${created}`);
        return create(`pipe-${created}`, created % 3 === 0 ? 20 * 1024 : 0);
      }
      kinds.push(`get ${created}`);
      return created === 0 ? get('/pets?limit=1') : get(`/pets/${created}`);
    };
    await conn.flood(12_000, 3_000, make, (r, i) => {
      const kind = kinds[i] as string;
      const [what, n] = kind.split(' ') as [string, string];
      if (what === 'create') {
        assert.equal(r.status, 201, `${kind}: ${r.body.toString()}`);
        assert.equal((JSON.parse(r.body.toString()) as { id: number }).id, Number(n));
      } else if (n !== '0') {
        assert.equal(r.status, 200, `${kind}: ${r.body.toString()}`);
        assert.equal((JSON.parse(r.body.toString()) as { name: string }).name, `pipe-${n}`, kind);
      }
    });
    conn.close();
    assert.equal(created, 48);
  } finally {
    assert.equal(await srv.stop(), 0, srv.stderr());
  }
});
