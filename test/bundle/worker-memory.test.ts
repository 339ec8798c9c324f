// What a worker holds stays within its caches' bounds under mixed load: `--workers 2` on
// PostgreSQL and Redis (the read cache on), 20,000 pets with 240-character CJK names, every pet
// read once by id, 3,000 distinct full pages and 2,000 creates. Each worker's live memory
// (heap and Buffers outside it, after forced collections) may grow by at most what its caches
// are documented to hold (the read cache's 32 MiB and the byte caches' 24 MiB) and 16 MiB more
// for everything else. Caches bounded in entries (long names take far more than a short one),
// pages keeping copies of their pets, or kept small Buffers that each hold a shared 8 KiB pool
// slab grew a worker far past that.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { KEYS, call, startBundle, tempDir, testConfig, writeConfig } from '../support/bundle.js';
import { skipUnless } from '../support/engines.js';
import { liveHeap, liveHeapEnv, type LiveHeap } from '../support/live-heap.js';
import { startPostgres } from '../support/postgres.js';
import { startRedis } from '../support/redis.js';

const skip = skipUnless('worker memory test', ['postgres', 'redis']);
const ADMIN = 'admin-memory-key-0123';
const PETS = 20_000;
const PAGES = 3_000;
const CREATES = 2_000;
const CLIENTS = 16;
const MiB = 1024 * 1024;
/** The documented caches (read cache 32 MiB, byte caches 24 MiB) and 16 MiB for the rest. */
const ALLOWED = (32 + 24 + 16) * MiB;

const name = (i: number): string => `${'名'.repeat(232)}${String(i).padStart(8, '0')}`;
const live = (h: LiveHeap): number => h.heapUsed + h.external;

/** Runs `count` requests made by `make(i)` from CLIENTS concurrent clients; all must succeed. */
async function run(count: number, make: (i: number) => Promise<number>, expected: number): Promise<void> {
  let next = 0;
  const bad: number[] = [];
  await Promise.all(Array.from({ length: CLIENTS }, async () => {
    for (let i = next++; i < count; i = next++) {
      const status = await make(i);
      if (status !== expected && bad.length < 5) bad.push(status);
    }
  }));
  assert.deepEqual(bad, [], `every answer ${expected}`);
}

test('with --workers 2 on PostgreSQL and Redis, a worker grows by no more than its caches hold under mixed load', { skip, timeout: 600_000 }, async (t) => {
  const pg = await startPostgres({ t });
  const redis = await startRedis();
  t.after(() => redis.close());
  const dir = tempDir();
  const config = writeConfig(dir, testConfig({ admin: { key: ADMIN } }));
  const srv = await startBundle(['--config', config, '--store', pg.url, '--limits', redis.url, '--workers', '2'], { cwd: dir, env: liveHeapEnv() });
  t.after(() => srv.stop());
  const pid = srv.proc.pid as number;
  const workers = execFileSync('pgrep', ['-P', String(pid)], { encoding: 'utf8' }).trim().split('\n').map(Number);
  assert.equal(workers.length, 2, `two workers: ${workers.join(',')}`);
  const heapOf = (worker: number): Promise<LiveHeap> => liveHeap({ proc: { kill: (signal) => process.kill(worker, signal) }, stderr: srv.stderr });
  const base = srv.url.replace(/\/v1$/, '');
  const key = KEYS.enterprise;

  for (let from = 0; from < PETS; from += 5000) {
    const pets = Array.from({ length: 5000 }, (_, i) => ({ name: name(from + i), categoryId: from + i, status: i % 2 === 0 ? 'available' : 'sold' }));
    const seeded = await call(`${base}/__admin/seed`, { method: 'POST', key: ADMIN, body: JSON.stringify(pets), headers: { 'content-type': 'application/json' } });
    assert.equal(seeded.status, 201, seeded.text);
  }
  // Warm: both workers have answered and built what they keep for good.
  await run(200, async (i) => (await call(`${srv.url}/pets?limit=5&cursor=${PETS + i}`, { key })).status, 200);
  const before: number[] = [];
  for (const w of workers) before.push(live(await heapOf(w)));

  await run(PETS, async (i) => (await call(`${srv.url}/pets/${i + 1}`, { key })).status, 200);
  await run(PAGES, async (i) => (await call(`${srv.url}/pets?limit=100&cursor=${(i * 7) % (PETS - 200)}`, { key })).status, 200);
  await run(CREATES, async (i) => (await call(`${srv.url}/pets`, {
    method: 'POST', key, body: JSON.stringify({ name: name(PETS + i), categoryId: 1 }), headers: { 'content-type': 'application/json' },
  })).status, 201);
  // The pets just created, read again, and the pages again (hits, and pages dropped and read anew).
  await run(CREATES, async (i) => (await call(`${srv.url}/pets/${PETS + i + 1}`, { key })).status, 200);
  await run(PAGES, async (i) => (await call(`${srv.url}/pets?limit=100&status=sold&cursor=${(i * 11) % (PETS - 400)}`, { key })).status, 200);

  const grown: string[] = [];
  for (const [i, w] of workers.entries()) {
    const after = await heapOf(w);
    const growth = live(after) - (before[i] as number);
    t.diagnostic(`worker ${i + 1}: live ${(live(after) / MiB).toFixed(1)} MiB (+${(growth / MiB).toFixed(1)}), heap ${(after.heapUsed / MiB).toFixed(1)} MiB, external ${(after.external / MiB).toFixed(1)} MiB, rss ${(after.rss / MiB).toFixed(1)} MiB`);
    if (growth > ALLOWED) grown.push(`worker ${i + 1} grew by ${(growth / MiB).toFixed(1)} MiB`);
  }
  assert.deepEqual(grown, [], `at most ${ALLOWED / MiB} MiB each`);
});
