// Idempotent creates with pets in PostgreSQL, from the outside: two bundle processes on one
// database as one service. The same key sent to both at once makes one pet (each answer the
// same 201 or a 409); a replay through the other process after the first answered; a 422 for
// another payload; SIGKILL right after the 201 and the replay through the restarted process;
// expiry by the embedder's clock. Against a real server, skipped with one line without one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pathToFileURL } from 'node:url';
import { BUNDLE, KEYS, call, startBundle, tempDir, testConfig, writeConfig, type Res, type Running } from '../support/bundle.js';
import { skipUnless } from '../support/engines.js';
import { startPostgres } from '../support/postgres.js';

const skip = skipUnless('PostgreSQL idempotency black-box tests', ['postgres']);
const HOUR = 3_600_000;

function create(url: string, key: string, body: unknown, idem?: string): Promise<Res> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (idem !== undefined) headers['idempotency-key'] = idem;
  return call(`${url}/pets`, { method: 'POST', key, headers, body: JSON.stringify(body) });
}

async function start(storeUrl: string, t: { after(fn: () => unknown): void }): Promise<Running> {
  const dir = tempDir();
  // --env: both processes build the same links, so a Location is comparable byte for byte.
  const srv = await startBundle(['--config', writeConfig(dir), '--store', storeUrl, '--env', 'production'], { cwd: dir });
  t.after(() => srv.stop('SIGKILL'));
  return srv;
}

const IN_USE = {
  code: 'idempotency_key_in_use',
  message: 'A request with this Idempotency-Key is still being processed; retry once it has been answered.',
  status: 409,
};

test('two processes, one key sent to both at once: one pet; every answer the same 201 or a 409', { skip }, async (t) => {
  const pg = await startPostgres({ t });
  const a = await start(pg.url, t);
  const b = await start(pg.url, t);
  let waited = 0;
  for (let round = 0; round < 8; round++) {
    const pet = { name: `Rex ${round}`, categoryId: round, status: 'pending' };
    const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => create((i % 2 === 0 ? a : b).url, KEYS.enterprise, pet, `race-${round}`)));
    const created = answers.filter((r) => r.status === 201);
    const inUse = answers.filter((r) => r.status === 409);
    assert.equal(created.length + inUse.length, 6, answers.map((r) => `${r.status} ${r.text}`).join('\n'));
    assert.ok(created.length >= 2, 'at least one answer from each process is a 201 (a repeat through the other waits, then replays)');
    for (const r of created) {
      assert.equal(r.text, created[0]?.text);
      assert.equal(r.headers.get('location'), created[0]?.headers.get('location'));
    }
    for (const r of inUse) assert.deepEqual(r.json, IN_USE);
    waited += created.length - 1;
    assert.equal(await pg.psql(`SELECT count(*) FROM petstore_pets WHERE name = 'Rex ${round}'`), '1\n', 'one pet per key');
  }
  t.diagnostic(`${waited} repeats answered with the first's 201`);
  assert.equal(await pg.psql('SELECT count(*) FROM petstore_pets'), '8\n');
  assert.equal(await pg.psql("SELECT count(*) FROM petstore_idempotency_keys WHERE scope <> ''"), '8\n');
});

test('a replay through the other process gets the same 201; another payload a 422 there too; another API key its own pet', { skip }, async (t) => {
  const pg = await startPostgres({ t });
  const a = await start(pg.url, t);
  const b = await start(pg.url, t);
  const rex = { name: 'Rex', categoryId: 1, status: 'available' };
  const first = await create(a.url, KEYS.free, rex, 'order-1');
  assert.equal(first.status, 201, first.text);
  assert.equal(first.headers.get('location'), 'https://api.example.com/v1/pets/1');
  const replay = await create(b.url, KEYS.free, { categoryId: 1, status: 'available', name: 'Rex', id: 42 }, '"order-1"');
  assert.equal(replay.status, 201, replay.text);
  assert.equal(replay.text, first.text, 'the same body, byte for byte');
  assert.equal(replay.headers.get('location'), first.headers.get('location'));
  for (const srv of [a, b]) {
    const other = await create(srv.url, KEYS.free, { name: 'Tom', categoryId: 1 }, 'order-1');
    assert.equal(other.status, 422, other.text);
    assert.equal((other.json as { code: string }).code, 'idempotency_key_reused');
  }
  const theirs = await create(b.url, KEYS.pro, rex, 'order-1');
  assert.equal(theirs.status, 201);
  assert.equal((theirs.json as { id: number }).id, 2, 'another API key: its own pet');
  // Without the header each create is a new pet, as before.
  assert.equal((await create(a.url, KEYS.free, rex)).status, 201);
  assert.equal((await create(b.url, KEYS.free, rex)).status, 201);
  assert.equal(await pg.psql('SELECT count(*) FROM petstore_pets'), '4\n');
});

test('SIGKILL right after the 201: the replay through the restarted process returns the same pet; no second one', { skip }, async (t) => {
  const pg = await startPostgres({ t });
  let a = await start(pg.url, t);
  const pet = { name: 'Rex', categoryId: 7, status: 'sold' };
  const first = await create(a.url, KEYS.free, pet, 'survives');
  assert.equal(first.status, 201, first.text);
  a.proc.kill('SIGKILL');
  await a.exited;
  a = await start(pg.url, t);
  const replay = await create(a.url, KEYS.free, pet, 'survives');
  assert.equal(replay.status, 201, replay.text);
  assert.equal(replay.text, first.text);
  assert.equal(replay.headers.get('location'), first.headers.get('location'));
  assert.equal((await create(a.url, KEYS.free, { name: 'Tom', categoryId: 7 }, 'survives')).status, 422);
  assert.equal(await pg.psql('SELECT count(*) FROM petstore_pets'), '1\n');
});

test('embedding with a store URL: a key expires after its retention by the injected clock, 24 hours or as configured', { skip }, async (t) => {
  const pg = await startPostgres({ t });
  // The bundle where it was built: postgres.js resolves from the repository's node_modules.
  const mod = (await import(pathToFileURL(BUNDLE).href)) as {
    startPetstore(o: Record<string, unknown>): Promise<{ url: string; close(): Promise<void>; reset(): Promise<void> }>;
    ManualClock: new () => { advance(ms: number): void };
  };
  for (const { hours, config } of [{ hours: 24, config: testConfig() }, { hours: 2, config: testConfig({ idempotencyRetentionHours: 2 }) }]) {
    const clock = new mod.ManualClock();
    const srv = await mod.startPetstore({ port: 0, clock, config, store: pg.url, logger: false });
    try {
      await srv.reset();
      const pet = { name: 'Rex', categoryId: 1 };
      const first = await create(srv.url, KEYS.enterprise, pet, 'k');
      assert.equal(first.status, 201);
      clock.advance(hours * HOUR - 1);
      assert.equal((await create(srv.url, KEYS.enterprise, pet, 'k')).text, first.text, `still remembered just before ${hours} h`);
      assert.equal((await create(srv.url, KEYS.enterprise, { name: 'Tom', categoryId: 2 }, 'k')).status, 422);
      clock.advance(1);
      const later = await create(srv.url, KEYS.enterprise, { name: 'Tom', categoryId: 2 }, 'k');
      assert.equal(later.status, 201, `forgotten after ${hours} h: ${later.text}`);
      assert.equal((later.json as { id: number }).id, 2);
      assert.equal((await create(srv.url, KEYS.enterprise, { name: 'Tom', categoryId: 2 }, 'k')).text, later.text, 'the new use is remembered');
    } finally {
      await srv.close();
    }
  }
  assert.equal(await pg.psql("SELECT count(*) FROM petstore_idempotency_keys WHERE scope <> ''"), '1\n');
});
