// The bundle with its pets in PostgreSQL (`--store URL`), from the outside: the same answers
// as with a data file, two processes as one service, a SIGKILL that loses nothing
// acknowledged, outages answered 503 and recovered from without a restart, a newer schema
// refused; and, without a server, the usage errors and the missing driver.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BUNDLE, KEYS, call, post, runBundle, startBundle, tempDir, testConfig, writeConfig, type Res, type Running } from '../support/bundle.js';
import { skipUnless } from '../support/engines.js';
import { startPostgres, type PostgresServer } from '../support/postgres.js';

const skip = skipUnless('PostgreSQL black-box tests', ['postgres']);
const KEY = KEYS.enterprise;

async function start(args: readonly string[], t: { after(fn: () => unknown): void }, env?: NodeJS.ProcessEnv): Promise<Running> {
  const dir = tempDir();
  const srv = await startBundle(['--config', writeConfig(dir), ...args], { cwd: dir, env });
  t.after(() => srv.stop('SIGKILL'));
  return srv;
}

/** What a client sees of an answer, with the instance's base URL taken out. */
function seen(res: Res, base: string): Record<string, unknown> {
  const strip = (v: string | null): string | null => (v === null ? null : v.split(base).join('{base}'));
  return {
    status: res.status,
    body: res.text,
    link: strip(res.headers.get('link')),
    location: strip(res.headers.get('location')),
    contentType: res.headers.get('content-type'),
    allow: res.headers.get('allow'),
    deprecation: res.headers.get('deprecation'),
  };
}

/** The same requests, in order, against one instance; every answer as a client sees it. */
async function script(base: string): Promise<Array<Record<string, unknown>>> {
  const out: Array<Record<string, unknown>> = [];
  const get = async (path: string, key: string | undefined = KEY): Promise<void> => {
    out.push({ path, ...seen(await call(`${base}${path}`, key === undefined ? {} : { key }), base) });
  };
  const statuses = ['available', 'pending', 'sold', undefined];
  for (let i = 0; i < 25; i++) {
    const status = statuses[i % 4];
    out.push({ create: i, ...seen(await post(`${base}/pets`, KEY, { name: `pet ${i} ✓`, categoryId: i * 1000, ...(status ? { status } : {}), id: 999 }), base) });
  }
  await get('/pets');
  await get('/pets?limit=10');
  await get('/pets?limit=10&cursor=10');
  await get('/pets?limit=10&cursor=20');
  await get('/pets?status=sold&limit=3');
  await get('/pets?status=sold&limit=3&cursor=11');
  await get('/pets?status=pending&limit=100');
  await get('/pets/1');
  await get('/pets/25');
  await get('/pets/26');
  await get('/pets/0');
  await get('/pets/-3');
  await get('/pets/99999999999999999');
  await get('/pets/abc');
  await get('/pets/99999999999999999999');
  await get('/pets?limit=0');
  await get('/pets?limit=101');
  await get('/pets?status=lost');
  await get('/pets?cursor=x');
  await get('/pets', undefined);
  await get('/store/orders');
  await get('/nope');
  for (const body of [{}, { name: '', categoryId: 1 }, { name: 'x', categoryId: 1.5 }, { name: 'x', categoryId: 1, status: 'gone' }, [1]]) {
    out.push({ body, ...seen(await post(`${base}/pets`, KEY, body), base) });
  }
  out.push({ text: true, ...seen(await call(`${base}/pets`, { method: 'POST', key: KEY, headers: { 'content-type': 'text/plain' }, body: 'x' }), base) });
  out.push({ put: true, ...seen(await call(`${base}/pets`, { method: 'PUT', key: KEY }), base) });
  await get('/pets?limit=100');
  return out;
}

test('--store answers exactly like --data: creates, pages and next links, 404s, 400s, 401, 405, 415', { skip }, async (t) => {
  const pg = await startPostgres({ t });
  const dir = tempDir();
  const withFile = await start(['--data', join(dir, 'pets.json')], t);
  const withStore = await start(['--store', pg.url], t);
  const [fileAnswers, storeAnswers] = await Promise.all([script(withFile.url), script(withStore.url)]);
  assert.equal(storeAnswers.length, fileAnswers.length);
  for (let i = 0; i < fileAnswers.length; i++) assert.deepEqual(storeAnswers[i], fileAnswers[i], `answer #${i}`);
  // And the answers are the ones expected (not two identical mistakes).
  const list = storeAnswers.find((a) => a.path === '/pets?limit=10');
  assert.equal(list?.link, '<{base}/pets?limit=10&cursor=10>; rel="next"');
  assert.equal(JSON.parse(String(storeAnswers[0]?.body)).id, 1);
  assert.equal(storeAnswers.find((a) => a.path === '/pets/26')?.status, 404);
  assert.equal(await pg.psql('SELECT count(*) FROM petstore_pets'), '25\n');
});

test('two processes on one database: a pet created through one is found through the other; 40 concurrent creates get unique ids', { skip }, async (t) => {
  const pg = await startPostgres({ t });
  const a = await start(['--store', pg.url], t);
  const b = await start(['--store', pg.url], t);
  for (let i = 0; i < 5; i++) {
    const [from, to] = i % 2 === 0 ? [a, b] : [b, a];
    const created = await post(`${from.url}/pets`, KEY, { name: `n${i}`, categoryId: i });
    assert.equal(created.status, 201);
    const id = (created.json as { id: number }).id;
    const found = await call(`${to.url}/pets/${id}`, { key: KEY });
    assert.equal(found.status, 200, 'found through the other process on the next request');
    assert.equal(found.text, created.text);
  }
  const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => post(`${(i % 2 === 0 ? a : b).url}/pets`, KEY, { name: `c${i}`, categoryId: i })));
  assert.deepEqual(answers.map((r) => r.status), Array(40).fill(201));
  const ids = answers.map((r) => (r.json as { id: number }).id);
  assert.equal(new Set(ids).size, 40, 'unique');
  for (const srv of [a, b]) {
    const listed = (await call(`${srv.url}/pets?limit=100`, { key: KEY })).json as Array<{ id: number }>;
    assert.deepEqual(listed.map((p) => p.id), [1, 2, 3, 4, 5, ...[...ids].sort((x, y) => x - y)], 'ascending, every pet in both');
  }
});

test('SIGKILL of one process under concurrent creates loses no acknowledged pet', { skip }, async (t) => {
  const pg = await startPostgres({ t });
  const a = await start(['--store', pg.url], t);
  const b = await start(['--store', pg.url], t);
  const acknowledged: Array<{ id: number; name: string }> = [];
  let stop = false;
  const creator = async (srv: Running, w: number): Promise<void> => {
    for (let i = 0; !stop; i++) {
      const name = `w${w}-${i}`;
      try {
        const res = await post(`${srv.url}/pets`, KEY, { name, categoryId: w });
        if (res.status === 201) acknowledged.push({ id: (res.json as { id: number }).id, name });
      } catch {
        if (srv === a) return; // the killed process: its connection is gone
      }
    }
  };
  const workers = Array.from({ length: 8 }, (_, w) => creator(w % 2 === 0 ? a : b, w));
  while (acknowledged.length < 100) await new Promise((r) => setTimeout(r, 10));
  a.proc.kill('SIGKILL');
  await a.exited;
  const afterKill = acknowledged.length;
  while (acknowledged.length < afterKill + 50) await new Promise((r) => setTimeout(r, 10));
  stop = true;
  await Promise.all(workers);
  const stored = new Map<number, string>();
  for (let cursor = 0; ;) {
    const page = (await call(`${b.url}/pets?limit=100&cursor=${cursor}`, { key: KEY })).json as Array<{ id: number; name: string }>;
    if (page.length === 0) break;
    for (const p of page) stored.set(p.id, p.name);
    cursor = page[page.length - 1]?.id ?? cursor;
  }
  for (const pet of acknowledged) assert.equal(stored.get(pet.id), pet.name, `acknowledged pet ${pet.id} is stored`);
  assert.ok(acknowledged.length >= 150);
});

test('PostgreSQL stopped or hung: 503 service_unavailable with Retry-After, then 201 again without a restart', { skip }, async (t) => {
  const pg = await startPostgres({ t });
  const srv = await start(['--store', `${pg.url}?query_timeout=500&connect_timeout=1`], t);
  assert.equal((await post(`${srv.url}/pets`, KEY, { name: 'a', categoryId: 1 })).status, 201);
  const UNREACHABLE = 'The database cannot be reached right now; retry later.';
  // A create sent to a hung server cannot be known to have committed or not: it says so.
  const UNKNOWN = 'The database connection was lost after this create was sent, and whether the pet was stored cannot be known now. Retry with the same Idempotency-Key to get the outcome without creating it twice.';
  const expect503 = (res: Res, what: string, message = UNREACHABLE): void => {
    assert.equal(res.status, 503, what);
    assert.deepEqual(res.json, { code: 'service_unavailable', message, status: 503 });
    assert.equal(res.headers.get('retry-after'), '5');
    assert.ok(res.headers.get('x-ratelimit-remaining') !== null, 'still carries the rate-limit headers');
  };
  for (const outage of ['stop', 'pause'] as const) {
    const create = async (): Promise<void> => expect503(await post(`${srv.url}/pets`, KEY, { name: 'b', categoryId: 1 }), `${outage}: create`, outage === 'stop' ? UNREACHABLE : UNKNOWN);
    const reads = async (): Promise<void> => {
      expect503(await call(`${srv.url}/pets`, { key: KEY }), `${outage}: list`);
      expect503(await call(`${srv.url}/pets/1`, { key: KEY }), `${outage}: get`);
    };
    if (outage === 'stop') {
      // Reads first: a create the service writes to a connection whose close it has not read
      // yet (a busy machine reads the server's goodbye and the request in the same turn) is
      // rightly of unknown outcome. Once a read has failed, every closed connection is seen,
      // and a create is refused before anything is sent.
      await pg.stop();
      await reads();
      await create();
    } else {
      // Create first, on a connection of the paused server: its statement is sent and never
      // answered, so its outcome is unknown.
      pg.pause();
      await create();
      await reads();
    }
    assert.equal((await call(`${srv.url}/pets/abc`, { key: KEY })).status, 400, 'a bad request is still a 400');
    assert.equal((await call(`${srv.url}/pets`)).status, 401);
    assert.equal((await call(srv.url.replace(/\/v1$/, '/healthz'))).status, 200);
    if (outage === 'stop') await pg.start();
    else pg.resume();
    let res: Res | undefined;
    for (let i = 0; i < 50 && res?.status !== 201; i++) res = await post(`${srv.url}/pets`, KEY, { name: `after ${outage}`, categoryId: 1 });
    assert.equal(res?.status, 201, `${outage}: a create succeeds again, same process`);
    assert.equal((await call(`${srv.url}/pets/1`, { key: KEY })).status, 200);
  }
  assert.equal(srv.proc.exitCode, null, 'never restarted');
  const names = ((await call(`${srv.url}/pets?limit=100`, { key: KEY })).json as Array<{ name: string }>).map((p) => p.name);
  assert.ok(names.includes('after stop') && names.includes('after pause'));
});

test('a database whose schema is newer refuses the start: one line, exit 1', { skip }, async (t) => {
  const pg = await startPostgres({ t });
  const first = await start(['--store', pg.url], t);
  await first.stop();
  await pg.psql('UPDATE petstore_schema SET version = 7');
  const dir = tempDir();
  const res = await runBundle(['--port', '0', '--config', writeConfig(dir), '--store', pg.url], { cwd: dir });
  assert.equal(res.code, 1);
  assert.equal(res.stdout, '');
  assert.match(res.stderr, /^petstore: PostgreSQL store postgres:\/\/postgres@127\.0\.0\.1:\d+\/petstore: its petstore schema is version 7, newer than this petstore's \(2\): run a petstore release that knows version 7\.\n$/);
});

test('precedence: --store over a config dataFile; --data over PETSTORE_STORE; the store is logged without its password', { skip }, async (t) => {
  const pg = await startPostgres({ t });
  const url = pg.url.replace('postgres@', 'postgres:Zq9secret@'); // trust authentication: the password is not checked
  const dir = tempDir();
  const config = writeConfig(dir, testConfig({ dataFile: 'pets.json' }));
  const srv = await startBundle(['--config', config, '--store', url, '--log-level', 'info'], { cwd: dir });
  t.after(() => srv.stop('SIGKILL'));
  assert.equal((await post(`${srv.url}/pets`, KEY, { name: 'in pg', categoryId: 1 })).status, 201);
  assert.equal(existsSync(join(dir, 'pets.json')), false, 'the config dataFile is not used');
  assert.equal(await pg.psql('SELECT name FROM petstore_pets'), 'in pg\n');
  const opened = srv.stdout().split('\n').find((l) => l.includes('"store opened"'));
  assert.ok(opened, srv.stdout());
  assert.match(opened, /"store":"postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:\d+\/petstore"/);
  assert.match(opened, /"createBatchesInFlight":2/, 'a process alone keeps a second batch queued behind the running one');
  assert.doesNotMatch(srv.stdout() + srv.stderr(), /Zq9secret/);
  await srv.stop();

  const dir2 = tempDir();
  const viaFlag = await startBundle(['--config', writeConfig(dir2), '--data', join(dir2, 'p.json')], { cwd: dir2, env: { PETSTORE_STORE: url } });
  t.after(() => viaFlag.stop('SIGKILL'));
  assert.equal((await post(`${viaFlag.url}/pets`, KEY, { name: 'in file', categoryId: 1 })).status, 201);
  assert.ok(existsSync(join(dir2, 'p.json.journal')), 'the flag --data wins over PETSTORE_STORE');
  assert.equal(await pg.psql('SELECT count(*) FROM petstore_pets'), '1\n');

  const viaEnv = await startBundle(['--config', writeConfig(dir2)], { cwd: dir2, env: { PETSTORE_STORE: url } });
  t.after(() => viaEnv.stop('SIGKILL'));
  assert.equal((await post(`${viaEnv.url}/pets`, KEY, { name: 'via env', categoryId: 1 })).status, 201);
  assert.equal(await pg.psql('SELECT count(*) FROM petstore_pets'), '2\n', 'PETSTORE_STORE alone: PostgreSQL');
});

test('usage: --store with --data or --memory, or a URL that is not PostgreSQL, exits 2; PETSTORE_STORE with PETSTORE_DATA too; store and dataFile in one config exits 1', async () => {
  const dir = tempDir();
  const config = writeConfig(dir);
  const cases: Array<{ args: string[]; env?: NodeJS.ProcessEnv; code: number; message: RegExp }> = [
    { args: ['--store', 'postgres://h/db', '--data', 'x.json'], code: 2, message: /--store cannot be used with --data: pets live in PostgreSQL or in a data file/ },
    { args: ['--store', 'postgres://h/db', '--memory'], code: 2, message: /--store cannot be used with --memory/ },
    { args: ['--store', 'mysql://u:pw@h/db'], code: 2, message: /--store must be a PostgreSQL URL/ },
    { args: [], env: { PETSTORE_STORE: 'postgres://h/db', PETSTORE_DATA: 'x.json' }, code: 2, message: /PETSTORE_STORE and PETSTORE_DATA cannot both be set/ },
    { args: [], env: { PETSTORE_STORE: 'redis://h' }, code: 2, message: /PETSTORE_STORE must be a PostgreSQL URL/ },
  ];
  for (const c of cases) {
    const res = await runBundle(['--port', '0', '--config', config, ...c.args], { cwd: dir, env: c.env });
    assert.equal(res.code, c.code, `${c.args.join(' ')}: ${res.stderr}`);
    assert.match(res.stderr, c.message);
    assert.equal(res.stderr.trim().split('\n').length, 1, 'one line');
    assert.doesNotMatch(res.stderr, /pw@/);
  }
  const both = join(dir, 'both.json');
  writeFileSync(both, JSON.stringify(testConfig({ store: 'postgres://u:pw@h/db', dataFile: 'pets.json' })));
  const res = await runBundle(['--port', '0', '--config', both], { cwd: dir });
  assert.equal(res.code, 1);
  assert.match(res.stderr, /both\.json/);
  assert.match(res.stderr, /store and dataFile cannot both be given/);
  assert.doesNotMatch(res.stderr, /pw@/);
});

test('the driver is not in the bundle; a store URL without it installed: one line naming npm install postgres, exit 1', async () => {
  const text = readFileSync(BUNDLE, 'utf8');
  assert.equal(text.match(/import\("postgres"\)/g)?.length, 1, 'one dynamic import of the driver');
  assert.doesNotMatch(text, /max_pipeline|function Connection\(/, 'none of the driver itself');
  // A directory with the bundle alone: no node_modules anywhere above it.
  const dir = tempDir();
  const bundle = join(dir, 'petstore.js');
  copyFileSync(BUNDLE, bundle);
  const config = writeConfig(dir);
  const run = (args: string[]) => new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    void import('node:child_process').then(({ spawn }) => {
      const proc = spawn(process.execPath, [bundle, '--port', '0', '--config', config, ...args], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      proc.stdout.on('data', (d: Buffer) => {
        stdout += d.toString();
        if (!proc.killed && stdout.includes('listening on')) proc.kill('SIGTERM'); // once: the stop logs to stdout too
      });
      proc.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
      proc.on('close', (code) => resolve({ code, stdout, stderr }));
    });
  });
  const missing = await run(['--store', 'postgres://u:secretpw@127.0.0.1:1/db']);
  assert.equal(missing.code, 1);
  assert.equal(missing.stdout, '');
  assert.equal(missing.stderr, 'petstore: Cannot use the PostgreSQL store: the PostgreSQL driver is not installed: run "npm install postgres" where petstore is installed.\n');
  // Without a URL the same copy needs nothing: the default service has no runtime dependency.
  const plain = await run(['--memory']);
  assert.equal(plain.code, 0, plain.stderr);
  assert.match(plain.stdout, /^petstore listening on http:\/\/127\.0\.0\.1:\d+\/v1$/m);
});
