// Ids stay within the safe integer range (JSON clients read them exactly). Once the largest is taken (a
// seed can take it), a create cannot succeed until a reset: it is answered 507 ids_exhausted,
// with no Retry-After (RFC 4918 section 11.5: not to be repeated by automation), never the
// "retry later" 503 of a store that may recover. The same with a data file, in memory, and
// in PostgreSQL.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { KEYS, call, post, startBundle, tempDir, testConfig, writeConfig, type Running } from '../support/bundle.js';
import { skipUnless } from '../support/engines.js';
import { startPostgres } from '../support/postgres.js';

const ADMIN_KEY = 'admin-key-for-ids-tests-0123';
const KEY = KEYS.enterprise;
const LAST = Number.MAX_SAFE_INTEGER;

function admin(srv: Running, path: string, body: unknown): Promise<Awaited<ReturnType<typeof call>>> {
  return call(`${srv.url.replace(/\/v1$/, '')}/__admin${path}`, {
    method: 'POST', key: ADMIN_KEY, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
  });
}

async function checkExhaustion(srv: Running): Promise<void> {
  const seeded = await admin(srv, '/seed', [{ id: LAST, name: 'last', categoryId: 1 }]);
  assert.equal(seeded.status, 201, seeded.text);
  for (const attempt of [1, 2]) {
    const refused = await post(`${srv.url}/pets`, KEY, { name: `after ${attempt}`, categoryId: 1 });
    assert.equal(refused.status, 507, refused.text);
    assert.equal(refused.headers.get('retry-after'), null, 'nothing to wait for');
    const body = refused.json as { code: string; message: string; status: number };
    assert.equal(body.code, 'ids_exhausted');
    assert.equal(body.status, 507);
    assert.match(body.message, /No pet id is left/);
  }
  // With an Idempotency-Key too, and the key stays free.
  const keyed = await call(`${srv.url}/pets`, {
    method: 'POST', key: KEY, headers: { 'content-type': 'application/json', 'idempotency-key': 'k-1' }, body: JSON.stringify({ name: 'k', categoryId: 1 }),
  });
  if (keyed.status !== 501) assert.equal(keyed.status, 507, keyed.text);
  // A seed without ids has none left either.
  assert.equal((await admin(srv, '/seed', [{ name: 'more', categoryId: 1 }])).status, 507);
  const listed = await call(`${srv.url}/pets?limit=100`, { key: KEY });
  assert.deepEqual((listed.json as Array<{ id: number }>).map((p) => p.id), [LAST], 'nothing was added');
  // Only a reset frees ids.
  const reset = await call(`${srv.url.replace(/\/v1$/, '')}/__admin/reset`, { method: 'POST', key: ADMIN_KEY });
  assert.equal(reset.status, 204);
  const fresh = await post(`${srv.url}/pets`, KEY, { name: 'fresh', categoryId: 1 });
  assert.equal(fresh.status, 201, fresh.text);
  assert.equal((fresh.json as { id: number }).id, 1);
}

for (const kind of ['file', 'memory'] as const) {
  test(`${kind} store: a create when no id is left is 507 ids_exhausted without Retry-After`, async () => {
    const dir = tempDir();
    const config = writeConfig(dir, testConfig({ admin: { key: ADMIN_KEY } }));
    const where = kind === 'file' ? ['--data', join(dir, 'pets.json')] : ['--memory'];
    const srv = await startBundle(['--config', config, ...where], { cwd: dir });
    try {
      await checkExhaustion(srv);
    } finally {
      assert.equal(await srv.stop(), 0, srv.stderr());
    }
  });
}

const skip = skipUnless('PostgreSQL ids exhausted', ['postgres']);

test('PostgreSQL store: a create when no id is left is 507 ids_exhausted without Retry-After', { skip }, async (t) => {
  const pg = await startPostgres({ t });
  const dir = tempDir();
  const config = writeConfig(dir, testConfig({ admin: { key: ADMIN_KEY } }));
  const srv = await startBundle(['--config', config, '--store', pg.url], { cwd: dir });
  try {
    await checkExhaustion(srv);
  } finally {
    assert.equal(await srv.stop(), 0, srv.stderr());
  }
});
