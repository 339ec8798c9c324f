// Idempotent creates, from the outside: the built bundle with a data file, talked to over HTTP.
// Same key and payload twice makes one pet; another payload is a 422; another API key has its
// own keys; concurrent repeats get the 201 or a 409; restarts and SIGKILL keep the key with the
// pet; the key expires by the embedder's clock.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { KEYS, ROOT, call, startBundle, tempDir, testConfig, writeConfig, type Res } from '../support/bundle.js';

const HOUR = 3_600_000;

function create(url: string, key: string, body: unknown, idem?: string): Promise<Res> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (idem !== undefined) headers['idempotency-key'] = idem;
  return call(`${url}/pets`, { method: 'POST', key, headers, body: JSON.stringify(body) });
}

async function count(url: string): Promise<number> {
  const res = await call(`${url}/pets?limit=100`, { key: KEYS.enterprise });
  assert.equal(res.status, 200, res.text);
  return (res.json as unknown[]).length;
}

function start(dir: string, extra: readonly string[] = [], config = testConfig()) {
  return startBundle(['--config', writeConfig(dir, config), '--data', join(dir, 'pets.json'), '--env', 'production', ...extra], { cwd: dir });
}

// The free plan with its day bucket binding (50 a day: one token back every 29 minutes), so the
// Remaining headers of two requests differ by what the second one took, however slow the machine.
const DAY_BINDS = testConfig({ plans: { free: { perMinute: 1000, perDay: 50 }, pro: { perMinute: 300, perDay: 10000 } } });

test('same key and payload twice: one pet, and the same 201 byte for byte; another payload 422; another API key its own pet', async () => {
  const dir = tempDir();
  const srv = await start(dir, [], DAY_BINDS);
  try {
    const rex = { name: 'Rex', categoryId: 1, status: 'available' };
    const first = await create(srv.url, KEYS.free, rex, 'order-1');
    assert.equal(first.status, 201, first.text);
    assert.equal(first.headers.get('location'), 'https://api.example.com/v1/pets/1');
    // The quoted form (the draft's Structured Field string) is the same key; key order and
    // ignored fields do not make another payload: the validated NewPet is the same.
    const again = await create(srv.url, KEYS.free, { status: 'available', categoryId: 1, name: 'Rex', id: 99 }, '"order-1"');
    assert.equal(again.status, 201, again.text);
    assert.equal(again.text, first.text);
    assert.equal(again.headers.get('location'), first.headers.get('location'));
    // A replay is counted by the limiter like any request.
    assert.equal(first.headers.get('x-ratelimit-limit'), '50', 'the day bucket binds');
    assert.equal(Number(again.headers.get('x-ratelimit-remaining')), Number(first.headers.get('x-ratelimit-remaining')) - 1);
    assert.equal(await count(srv.url), 1);

    const other = await create(srv.url, KEYS.free, { name: 'Tom', categoryId: 1 }, 'order-1');
    assert.equal(other.status, 422, other.text);
    assert.deepEqual(other.json, {
      code: 'idempotency_key_reused',
      message: 'This Idempotency-Key was already used with another payload; send a new key for a new pet.',
      status: 422,
    });
    assert.equal(await count(srv.url), 1, 'nothing added');

    const theirs = await create(srv.url, KEYS.pro, rex, 'order-1');
    assert.equal(theirs.status, 201, theirs.text);
    assert.equal((theirs.json as { id: number }).id, 2, 'another API key: its own pet');
    assert.equal((await create(srv.url, KEYS.pro, rex, 'order-1')).text, theirs.text);
    assert.equal(await count(srv.url), 2);

    // Without the header nothing changes: each create is a new pet.
    assert.equal((await create(srv.url, KEYS.free, rex)).status, 201);
    assert.equal((await create(srv.url, KEYS.free, rex)).status, 201);
    assert.equal(await count(srv.url), 4);
  } finally {
    assert.equal(await srv.stop(), 0);
  }
});

test('a bad Idempotency-Key is a 400 naming the header, and a failed create leaves the key free', async () => {
  const dir = tempDir();
  const srv = await start(dir);
  try {
    for (const bad of ['""', '"unterminated', 'k'.repeat(256), '"a" "b"']) {
      const res = await create(srv.url, KEYS.free, { name: 'Rex', categoryId: 1 }, bad);
      assert.equal(res.status, 400, `${bad}: ${res.text}`);
      assert.equal((res.json as { code: string }).code, 'invalid_request');
      assert.match((res.json as { message: string }).message, /Idempotency-Key/);
    }
    const twice = await rawPost(srv.url, ['Idempotency-Key', 'a', 'Idempotency-Key', 'b']);
    assert.equal(twice.status, 400, twice.text);
    assert.match(twice.text, /Idempotency-Key must be given only once/);
    assert.equal(await count(srv.url), 0, 'nothing stored');

    // Only a 201 is remembered: a 400 stores nothing, so the retry is processed anew.
    const invalid = await create(srv.url, KEYS.free, { name: '', categoryId: 1 }, 'retry-me');
    assert.equal(invalid.status, 400);
    const fixed = await create(srv.url, KEYS.free, { name: 'Rex', categoryId: 1 }, 'retry-me');
    assert.equal(fixed.status, 201, fixed.text);
    assert.equal(await count(srv.url), 1);
  } finally {
    assert.equal(await srv.stop(), 0);
  }
});

/** A create with raw header lines (fetch would join two into one). */
function rawPost(url: string, extra: string[]): Promise<{ status: number; text: string }> {
  const body = JSON.stringify({ name: 'Rex', categoryId: 1 });
  const headers = ['Host', new URL(url).host, 'Authorization', `Bearer ${KEYS.free}`, 'Content-Type', 'application/json', 'Content-Length', String(Buffer.byteLength(body)), ...extra];
  return new Promise((resolve, reject) => {
    const req = request(`${url}/pets`, { method: 'POST', headers }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => { text += d.toString(); });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

test('12 concurrent requests with one key: one pet; every answer the same 201 or a 409', async (t) => {
  const dir = tempDir();
  const srv = await start(dir);
  try {
    for (let round = 0; round < 5; round++) {
      const pet = { name: `Rex ${round}`, categoryId: round };
      const answers = await Promise.all(Array.from({ length: 12 }, () => create(srv.url, KEYS.enterprise, pet, `burst-${round}`)));
      const created = answers.filter((r) => r.status === 201);
      const inUse = answers.filter((r) => r.status === 409);
      assert.equal(created.length + inUse.length, 12, answers.map((r) => `${r.status} ${r.text}`).join('\n'));
      assert.ok(created.length >= 1);
      for (const r of created) {
        assert.equal(r.text, created[0]?.text);
        assert.equal(r.headers.get('location'), created[0]?.headers.get('location'));
      }
      for (const r of inUse) {
        assert.deepEqual(r.json, {
          code: 'idempotency_key_in_use',
          message: 'A request with this Idempotency-Key is still being processed; retry once it has been answered.',
          status: 409,
        });
      }
      t.diagnostic(`round ${round}: ${created.length} x 201, ${inUse.length} x 409`);
      assert.equal(await count(srv.url), round + 1, 'one pet per key');
      // Once answered, a retry of any of them is the 201.
      assert.equal((await create(srv.url, KEYS.enterprise, pet, `burst-${round}`)).text, created[0]?.text);
    }
  } finally {
    assert.equal(await srv.stop(), 0);
  }
});

for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
  test(`${signal} right after the 201: the replay after the restart returns the same pet, and no second one appears`, async () => {
    const dir = tempDir();
    let srv = await start(dir);
    const pet = { name: 'Rex', categoryId: 7, status: 'sold' };
    const first = await create(srv.url, KEYS.free, pet, 'survives');
    assert.equal(first.status, 201, first.text);
    srv.proc.kill(signal);
    await srv.exited;
    srv = await start(dir);
    try {
      const replay = await create(srv.url, KEYS.free, pet, 'survives');
      assert.equal(replay.status, 201, replay.text);
      assert.equal(replay.text, first.text, 'the same body, byte for byte');
      assert.equal(replay.headers.get('location'), first.headers.get('location'), 'the same Location');
      assert.equal((await create(srv.url, KEYS.free, { name: 'Tom', categoryId: 7 }, 'survives')).status, 422);
      assert.equal(await count(srv.url), 1);
    } finally {
      assert.equal(await srv.stop(), 0);
    }
  });
}

test('embedding: a key expires after its retention by the injected clock, 24 hours or as configured', async () => {
  const project = tempDir();
  cpSync(join(ROOT, 'dist'), join(project, 'vendor'), { recursive: true });
  writeFileSync(join(project, 'package.json'), '{"type":"module","private":true}');
  const mod = (await import(pathToFileURL(join(project, 'vendor', 'petstore.js')).href)) as {
    startPetstore(o: Record<string, unknown>): Promise<{ url: string; close(): Promise<void> }>;
    ManualClock: new () => { advance(ms: number): void };
  };
  for (const { hours, config } of [{ hours: 24, config: testConfig() }, { hours: 2, config: testConfig({ idempotencyRetentionHours: 2 }) }]) {
    const clock = new mod.ManualClock();
    const store = await mod.startPetstore({ port: 0, clock, config });
    try {
      const pet = { name: 'Rex', categoryId: 1 };
      const first = await create(store.url, KEYS.enterprise, pet, 'k');
      assert.equal(first.status, 201);
      clock.advance(hours * HOUR - 1);
      assert.equal((await create(store.url, KEYS.enterprise, pet, 'k')).text, first.text, `still remembered just before ${hours} h`);
      clock.advance(1);
      const later = await create(store.url, KEYS.enterprise, { name: 'Tom', categoryId: 2 }, 'k');
      assert.equal(later.status, 201, `forgotten after ${hours} h: ${later.text}`);
      assert.equal((later.json as { id: number }).id, 2);
    } finally {
      await store.close();
    }
  }
});
