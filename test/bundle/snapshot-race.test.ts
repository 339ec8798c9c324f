// Named snapshots are one point in time while requests keep coming: a save and a restore of a
// hundred and fifty thousand pets work in chunks that give the event loop back, and creates racing
// them are answered from the state entirely before or entirely after. On the file store a
// restore stays durable: a SIGKILL right after its 204, or during it, loses nothing
// acknowledged that the restore did not itself replace.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { KEYS, call, startBundle, tempDir, testConfig, writeConfig, type Res, type Running } from '../support/bundle.js';

const ADMIN_KEY = 'admin-key-for-snapshot-race-0123';
/** Pets seeded before the snapshot: enough for a restore to copy in several chunks (65,536 slots a turn). */
const SEEDED = 150_000;
/** Pets created with an Idempotency-Key before the snapshot: enough for a save to copy in two chunks (4,096 keys a turn). */
const KEYED = 4_500;
const SAVED = SEEDED + KEYED;

function admin(srv: Running, method: string, path: string, body?: unknown): Promise<Res> {
  return call(`${srv.url.replace(/\/v1$/, '')}/__admin${path}`, {
    method,
    key: ADMIN_KEY,
    ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  });
}

function create(srv: Running, name: string, idempotencyKey?: string): Promise<Res> {
  return call(`${srv.url}/pets`, {
    method: 'POST',
    key: KEYS.enterprise,
    headers: { 'content-type': 'application/json', ...(idempotencyKey === undefined ? {} : { 'idempotency-key': idempotencyKey }) },
    body: JSON.stringify({ name, categoryId: 1 }),
  });
}

/** Runs `fn` over 0..n-1 with at most `width` at a time. */
async function pool(n: number, width: number, fn: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < n) await fn(next++);
  }));
}

async function start(dir: string, data: boolean): Promise<Running> {
  const config = writeConfig(dir, testConfig({ admin: { key: ADMIN_KEY } }));
  return startBundle(['--config', config, ...(data ? ['--data', join(dir, 'pets.json')] : ['--memory'])], { cwd: dir });
}

/** SEEDED plain pets, then KEYED pets made with the keys `k0`.. (names `keyed-i`). */
async function fill(srv: Running): Promise<void> {
  for (let start = 0; start < SEEDED; start += 75_000) {
    const pets = Array.from({ length: 75_000 }, (_, i) => ({ name: `P${start + i + 1}`, categoryId: 1 }));
    const seeded = await admin(srv, 'POST', '/seed', pets);
    assert.equal(seeded.status, 201, seeded.text.slice(0, 200));
  }
  await pool(KEYED, 32, async (i) => {
    const r = await create(srv, `keyed-${i}`, `k${i}`);
    assert.equal(r.status, 201, r.text);
  });
}

/** Every pet above `afterId`, in id order, as `id:name`. */
async function tail(srv: Running, afterId: number): Promise<string[]> {
  const out: string[] = [];
  for (let cursor = afterId; ;) {
    const page = await call(`${srv.url}/pets?limit=100&cursor=${cursor}`, { key: KEYS.enterprise });
    assert.equal(page.status, 200, page.text);
    const pets = page.json as Array<{ id: number; name: string }>;
    for (const p of pets) out.push(`${p.id}:${p.name}`);
    if (pets.length < 100) return out;
    cursor = (pets.at(-1) as { id: number }).id;
  }
}

async function nameOf(srv: Running, id: number): Promise<string | number> {
  const r = await call(`${srv.url}/pets/${id}`, { key: KEYS.enterprise });
  return r.status === 200 ? (r.json as { name: string }).name : r.status;
}

describe('snapshots racing requests', () => {
  test('creates racing a save are never half in it: each is in it with its key, or neither', async () => {
    const dir = tempDir();
    const srv = await start(dir, false);
    try {
      await fill(srv);
      const created: Array<{ id: number; name: string; key: string }> = [];
      const racing = pool(300, 16, async (i) => {
        const r = await create(srv, `race-${i}`, `race-${i}`);
        assert.equal(r.status, 201, r.text);
        created.push({ id: (r.json as { id: number }).id, name: `race-${i}`, key: `race-${i}` });
      });
      await new Promise((r) => setTimeout(r, 5));
      const saved = await admin(srv, 'PUT', '/snapshots/race');
      await racing;
      assert.equal(saved.status, 201, saved.text);
      const pets = (saved.json as { pets: number }).pets;
      assert.ok(pets >= SAVED && pets <= SAVED + 300, String(pets));

      assert.equal((await admin(srv, 'POST', '/snapshots/race/restore')).status, 204);
      assert.equal(await nameOf(srv, pets), pets > SAVED ? (created.find((c) => c.id === pets) as { name: string }).name : `keyed-${KEYED - 1}`);
      assert.deepEqual(await tail(srv, pets), [], 'nothing after the snapshot\'s last pet');
      // A create in the snapshot came back with its key (a retry replays it); one after it
      // came back with neither (a retry makes a new pet).
      for (const c of created.filter((_, i) => i % 10 === 0)) {
        const retry = await create(srv, c.name, c.key);
        if (c.id <= pets) {
          assert.equal(retry.headers.get('idempotent-replayed'), 'true', `${c.name} (${c.id}) is in the snapshot, its key too`);
          assert.equal((retry.json as { id: number }).id, c.id);
        } else {
          assert.equal(retry.headers.get('idempotent-replayed'), null, `${c.name} (${c.id}) is after the snapshot, its key too`);
        }
      }
      const replay = await create(srv, 'keyed-17', 'k17');
      assert.equal(replay.headers.get('idempotent-replayed'), 'true', 'the keys saved in chunks are all there');
      const id = (replay.json as { id: number }).id;
      assert.ok(id > SEEDED && id <= SAVED, String(id));
    } finally {
      await srv.stop();
    }
  });

  for (const kill of ['after', 'during'] as const) {
    test(`file store: a restore racing creates ends with exactly the snapshot's pets plus the creates after it; SIGKILL ${kill} the 204 loses nothing acknowledged`, async () => {
      const dir = tempDir();
      let srv = await start(dir, true);
      const acked: Array<{ id: number; name: string }> = [];
      let restored: Res | undefined;
      try {
        await fill(srv);
        assert.equal((await admin(srv, 'PUT', '/snapshots/base')).status, 201);
        // 1,000 pets that the restore takes away: creates applied before the restore get ids
        // above SAVED + 1000, those applied after it ids from SAVED + 1.
        await pool(1000, 16, async (i) => {
          assert.equal((await create(srv, `pre-${i}`)).status, 201);
        });
        const racing = pool(300, 16, async (i) => {
          const r = await create(srv, `race-${i}`).catch(() => undefined);
          if (r?.status === 201) acked.push({ id: (r.json as { id: number }).id, name: `race-${i}` });
        });
        await new Promise((r) => setTimeout(r, 5));
        const restore = admin(srv, 'POST', '/snapshots/base/restore');
        if (kill === 'during') {
          await new Promise((r) => setTimeout(r, 30));
          srv.proc.kill('SIGKILL');
          restored = await restore.catch(() => undefined);
        } else {
          restored = await restore;
          assert.equal(restored.status, 204, restored.text);
          await new Promise((r) => setTimeout(r, 20));
          srv.proc.kill('SIGKILL');
        }
        await srv.exited;
        await racing;
      } finally {
        srv.proc.kill('SIGKILL');
        await srv.exited;
      }
      srv = await start(dir, true);
      try {
        const after = await tail(srv, SAVED);
        const applied = !after.some((p) => p.split(':')[1]?.startsWith('pre-'));
        if (restored?.status === 204) assert.ok(applied, 'a restore answered 204 survived the kill');
        for (let i = 0; i < after.length; i++) assert.equal(after[i]?.split(':')[0], String(SAVED + 1 + i), 'ids without a gap');
        if (applied) {
          // The snapshot's pets, then only creates applied after the restore.
          assert.equal(await nameOf(srv, SAVED), `keyed-${KEYED - 1}`);
          for (const p of after) assert.match(p, /:race-\d+$/, 'after the snapshot\'s pets: creates applied after the restore, nothing else');
          for (const a of acked) {
            if (a.id <= SAVED + 1000) assert.ok(after.includes(`${a.id}:${a.name}`), `${a.name} (${a.id}), acknowledged after the restore, is kept`);
            else assert.equal(await nameOf(srv, a.id), 404, `${a.name} (${a.id}), applied before the restore, went with it`);
          }
        } else {
          // Not restored (killed before its rename): the 1,000 and every acknowledged create.
          assert.equal(after.filter((p) => p.includes(':pre-')).length, 1000);
          for (const a of acked) assert.ok(after.includes(`${a.id}:${a.name}`), `${a.name} acknowledged, kept`);
        }
      } finally {
        await srv.stop();
      }
    });
  }
});
