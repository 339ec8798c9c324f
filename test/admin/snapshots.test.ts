// Named snapshots over the real parts: memory and file stores, the in-memory limiters, faults
// and the service clock. Saved and restored exactly; bounded; durable on the file store.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { ApiError, ManualClock, silentLogger, type NewPet } from '../../src/core/index.js';
import { Faults, MAX_SNAPSHOTS, Snapshots, parseFault, type FaultSpec } from '../../src/admin/index.js';
import { MemoryLimiter } from '../../src/limits/index.js';
import { newPetFingerprint, openFileStore, openMemoryStore, type LocalPetStore, type SnapshotStore } from '../../src/store/index.js';
import { allPets, tempDir } from '../support/bundle.js';

const BAN = { after: 2, seconds: 300 };
const LIMITS = { perMinute: 3, perDay: 100 };
const SCOPE = 'a'.repeat(64);

interface Parts {
  store: LocalPetStore & SnapshotStore;
  keys: MemoryLimiter;
  addresses: MemoryLimiter;
  faults: Faults;
  clock: ManualClock;
  snapshots: Snapshots;
}

function parts(store: LocalPetStore, clock: ManualClock): Parts {
  const keys = new MemoryLimiter({ clock, ban: BAN });
  const addresses = new MemoryLimiter({ clock, ban: BAN, maxEntries: 100 });
  const faults = new Faults();
  const s = store as LocalPetStore & SnapshotStore;
  return { store: s, keys, addresses, faults, clock, snapshots: new Snapshots({ store: s, limiters: [keys, addresses], faults, clock }) };
}

function fault(body: Record<string, unknown>): FaultSpec {
  const f = parseFault(body, ['listPets', 'createPet']);
  if (f instanceof ApiError) throw new Error(f.message);
  return f;
}

const pet = (name: string): NewPet => ({ name, categoryId: 1, status: 'available' });
const names = (store: LocalPetStore): string[] => allPets(store).map((s) => `${s.pet.id}:${s.pet.name}`);

async function ok<T>(p: Promise<T | ApiError>): Promise<T> {
  const v = await p;
  if (v instanceof ApiError) throw new Error(v.message);
  return v;
}

test('a restore puts back pets, next id, keys, limiter state, faults and clock offset exactly', async () => {
  const clock = new ManualClock();
  const p = parts(openMemoryStore({ clock }), clock);
  await p.store.create(pet('A'));
  await p.store.createIdempotent(pet('B'), { scope: SCOPE, key: 'k1', fingerprint: newPetFingerprint(pet('B')) });
  for (let i = 0; i < 4; i++) p.keys.take('key-1', LIMITS); // 3 admitted, 1 refused: one strike
  p.addresses.take('10.0.0.1', LIMITS);
  p.faults.set(fault({ operation: 'createPet', status: 503, count: 3 }));
  p.faults.take('createPet');
  clock.advance(1000);
  const before = { keys: await p.keys.exportSnapshot(), addresses: await p.addresses.exportSnapshot(), faults: p.faults.list(), offset: clock.offsetMs };

  assert.deepEqual(await ok(p.snapshots.save('base')), { name: 'base', pets: 2 });

  // Everything changes...
  await p.store.create(pet('C'));
  await p.store.reset();
  await p.store.create(pet('D'));
  for (let i = 0; i < 10; i++) p.keys.take('key-1', LIMITS); // banned now
  p.keys.take('key-2', LIMITS);
  p.faults.clear();
  clock.advance(7_200_000);

  assert.equal(await ok(p.snapshots.restore('base')), undefined);
  assert.deepEqual(names(p.store), ['1:A', '2:B']);
  assert.equal((await p.store.create(pet('E'))).pet.id, 3, 'the next id came back too');
  const replay = await p.store.createIdempotent(pet('B'), { scope: SCOPE, key: 'k1', fingerprint: newPetFingerprint(pet('B')) });
  assert.equal(replay.kind, 'replayed', 'the idempotency key came back');
  assert.equal(clock.offsetMs, before.offset);
  assert.deepEqual(p.faults.list(), before.faults);
  assert.deepEqual(await p.keys.exportSnapshot(), before.keys, 'buckets, strikes and LRU order as saved, the time since not counted');
  assert.deepEqual(await p.addresses.exportSnapshot(), before.addresses);
  assert.equal(p.keys.take('key-1', LIMITS).outcome, 'rate_limited', 'the key is still empty, not banned');
});

test('a ban comes back with the time it had left', async () => {
  const clock = new ManualClock();
  const p = parts(openMemoryStore({ clock }), clock);
  for (let i = 0; i < 7; i++) p.keys.take('k', LIMITS);
  const banned = p.keys.take('k', LIMITS);
  assert.equal(banned.outcome, 'temporarily_banned');
  await ok(p.snapshots.save('banned'));
  clock.advance(600_000);
  assert.equal(p.keys.take('k', LIMITS).outcome, 'ok', 'the ban ended');
  await ok(p.snapshots.restore('banned'));
  const again = p.keys.take('k', LIMITS);
  assert.equal(again.outcome, 'temporarily_banned');
  assert.equal(again.retryAfter, banned.retryAfter);
});

test('names: bad ones are 400, unknown ones 404, a 17th is 409 until one is deleted; a name saved again is replaced', async () => {
  const clock = new ManualClock();
  const p = parts(openMemoryStore({ clock }), clock);
  for (const bad of ['', 'a/b', 'x'.repeat(65), 'sp ace', 'é']) {
    const r = await p.snapshots.save(bad);
    assert.ok(r instanceof ApiError && r.status === 400, JSON.stringify(bad));
  }
  const missing = await p.snapshots.restore('nope');
  assert.ok(missing instanceof ApiError && missing.status === 404);
  assert.ok(p.snapshots.delete('nope') instanceof ApiError);
  for (let i = 0; i < MAX_SNAPSHOTS; i++) await ok(p.snapshots.save(`s${i}`));
  const full = await p.snapshots.save('one-more');
  assert.ok(full instanceof ApiError && full.status === 409 && full.code === 'conflict', String(full));
  await p.store.create(pet('A'));
  assert.deepEqual(await ok(p.snapshots.save('s3')), { name: 's3', pets: 1 }, 'an existing name is replaced, even when full');
  assert.equal(p.snapshots.delete('s0'), undefined);
  await ok(p.snapshots.save('one-more'));
  const listed = p.snapshots.list();
  assert.equal(listed.length, MAX_SNAPSHOTS);
  assert.deepEqual(listed.at(-1), { name: 'one-more', pets: 1, time: new Date(clock.now()).toISOString() });
  assert.ok(p.snapshots.bytes > 0);
});

test('a snapshot is the state when it was asked for, whatever is written while it is copied', async () => {
  const clock = new ManualClock();
  const p = parts(openMemoryStore({ clock }), clock);
  await p.store.seed(Array.from({ length: 100_000 }, (_, i) => ({ name: `P${i}`, categoryId: i, status: i % 2 === 0 ? 'sold' as const : undefined })));
  const saving = p.snapshots.save('big');
  // Writes land while the copy yields between chunks.
  const writes = (async () => {
    for (let i = 0; i < 20; i++) {
      await p.store.create(pet(`late${i}`));
      await new Promise((r) => setImmediate(r));
    }
    await p.store.reset();
    await p.store.create(pet('after-reset'));
  })();
  assert.deepEqual(await ok(saving), { name: 'big', pets: 100_000 });
  await writes;
  await ok(p.snapshots.restore('big'));
  assert.equal(p.store.count, 100_000);
  assert.equal(p.store.list({ limit: 1, afterId: 99_999 })[0]?.pet.name, 'P99999');
  assert.equal(p.store.list({ limit: 1, afterId: 100_000 }).length, 0);
  assert.equal(p.store.list({ status: 'sold', limit: 100, afterId: 99_000 }).length, 100, 'the status lists came back');
  assert.equal((await p.store.create(pet('next'))).pet.id, 100_001);
  // The snapshot itself is untouched by what the restored store does next: restore it again.
  await ok(p.snapshots.restore('big'));
  assert.equal(p.store.count, 100_000);
});

test('a save shares the stored pets: it costs a slot per pet and per status entry, not a copy of each pet', async () => {
  const clock = new ManualClock();
  const p = parts(openMemoryStore({ clock }), clock);
  await p.store.seed(Array.from({ length: 1000 }, (_, i) => ({ name: `P${i}`, categoryId: i, status: i % 2 === 0 ? 'sold' as const : undefined })));
  await ok(p.snapshots.save('s'));
  assert.equal(p.snapshots.bytes, (1000 + 500) * 8);
  const snap = await p.store.captureSnapshot() as unknown as { state: { pets: unknown[][] } };
  assert.equal(snap.state.pets[0]?.[0], p.store.get(1)?.pet, 'the very same pet object (in the first segment of the pets)');
});

test('file store: a restore is durable before it is answered, and writes after it go on top', async () => {
  const file = join(tempDir(), 'pets.json');
  const clock = new ManualClock();
  const store = await openFileStore(file, { logger: silentLogger, clock, compactMinBytes: 1 << 30 });
  const p = parts(store, clock);
  await store.seed([pet('A'), pet('B')]);
  await store.createIdempotent(pet('K'), { scope: SCOPE, key: 'k1', fingerprint: newPetFingerprint(pet('K')) });
  await ok(p.snapshots.save('three'));
  await store.create(pet('D'));
  await store.reset();
  await store.create(pet('E'));
  await ok(p.snapshots.restore('three'));
  assert.equal((await store.create(pet('F'))).pet.id, 4);
  await store.close();
  const reopened = await openFileStore(file, { logger: silentLogger, clock });
  try {
    assert.deepEqual(names(reopened), ['1:A', '2:B', '3:K', '4:F']);
    const replay = await reopened.createIdempotent(pet('K'), { scope: SCOPE, key: 'k1', fingerprint: newPetFingerprint(pet('K')) });
    assert.equal(replay.kind, 'replayed', 'the key was written with its pet');
  } finally {
    await reopened.close();
  }
});

test('file store: a restore that cannot be written is a 503 and changes nothing', async () => {
  const file = join(tempDir(), 'pets.json');
  const clock = new ManualClock();
  let failWrites = false;
  const store = await openFileStore(file, {
    logger: silentLogger, clock, compactMinBytes: 1 << 30,
    beforeIo: (op) => { if (failWrites && op === 'snapshot-write') throw Object.assign(new Error('disk full'), { code: 'ENOSPC' }); },
  });
  const p = parts(store, clock);
  await store.create(pet('A'));
  await ok(p.snapshots.save('one'));
  await store.create(pet('B'));
  failWrites = true;
  await assert.rejects(p.snapshots.restore('one'), (err: Error & { status?: number }) => /ENOSPC|disk full/.test(err.message));
  failWrites = false;
  assert.deepEqual(names(store), ['1:A', '2:B']);
  assert.equal((await store.create(pet('C'))).pet.id, 3);
  await store.close();
  const reopened = await openFileStore(file, { logger: silentLogger, clock });
  try {
    assert.deepEqual(names(reopened), ['1:A', '2:B', '3:C']);
  } finally {
    await reopened.close();
  }
});

test('a save and a restore work in chunks: the event loop gets turns, and what runs between them sees one whole state', async () => {
  const clock = new ManualClock();
  const p = parts(openMemoryStore({ clock }), clock);
  const addresses = new MemoryLimiter({ clock, ban: BAN, maxEntries: 50_000 });
  const snapshots = new Snapshots({ store: p.store, limiters: [p.keys, addresses], faults: p.faults, clock });
  await p.store.seed(Array.from({ length: 200_000 }, (_, i) => ({ name: `P${i}`, categoryId: 1, status: i % 3 === 0 ? 'sold' as const : undefined })));
  for (let i = 0; i < 20_000; i++) await p.store.createIdempotent(pet(`K${i}`), { scope: SCOPE, key: `k${i}`, fingerprint: newPetFingerprint(pet(`K${i}`)) });
  for (let i = 0; i < 30_000; i++) addresses.take(`10.0.${i >> 8}.${i & 255}`, LIMITS);

  /** Runs `op`, counting turns of the event loop until it settles and checking `between` at each. */
  async function turns(op: Promise<unknown>, between: () => void): Promise<number> {
    let done = false;
    void op.finally(() => { done = true; });
    let n = 0;
    while (!done) {
      between();
      n++;
      await new Promise((r) => setImmediate(r));
    }
    await op;
    return n;
  }

  const savedTurns = await turns(ok(snapshots.save('big')), () => {
    addresses.take('10.9.9.9', LIMITS); // a request during the save: not in it
  });
  assert.ok(savedTurns >= 5, `a save of 20,000 keys and 30,000 addresses gave the loop ${savedTurns} turns`);

  await p.store.reset();
  addresses.reset();
  addresses.take('192.168.1.1', LIMITS);
  const restoredTurns = await turns(ok(snapshots.restore('big')), () => {
    // Between the chunks: the state before, whole (the restored one only after the swap).
    const before = p.store.count === 0;
    assert.equal(addresses.size, before ? 1 : 30_000);
    assert.equal(p.store.idempotencyKeys, before ? 0 : 20_000);
  });
  assert.ok(restoredTurns >= 5, `a restore of 220,000 pets gave the loop ${restoredTurns} turns`);
  assert.equal(p.store.count, 220_000);
  assert.equal(addresses.size, 30_000, 'the address taken during the save is not in it');
  assert.equal(addresses.peek('10.9.9.9', LIMITS).remaining, String(LIMITS.perMinute), 'unknown again: full bucket');
});
