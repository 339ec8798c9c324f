// The real-engine test support itself: throwaway PostgreSQL and Redis servers start, answer
// through the chosen drivers (postgres.js, ioredis), stop, come back on the same port, and leave
// nothing behind; without the binaries, one skip line names the install command.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { Redis } from 'ioredis';
import { availability, skipReason, skipUnless } from './engines.js';
import { accepts } from './free-port.js';
import { UNTIL_MS } from './wait.js';
import { startPostgres } from './postgres.js';
import { startRedis } from './redis.js';

const skipPostgres = skipUnless('PostgreSQL support tests', ['postgres']);
const skipRedis = skipUnless('Redis support tests', ['redis']);

test('without the binaries: unavailable, one skip line naming the install command', async (t) => {
  const empty = mkdtempSync(join(tmpdir(), 'petstore-nobin-'));
  t.after(() => rmSync(empty, { recursive: true, force: true }));
  const found = availability({ searchPath: empty });
  assert.equal(found.postgres.available, false);
  assert.equal(found.redis.available, false);
  assert.deepEqual(found.redis.missing, ['redis-server']);
  const line = skipReason('shared-backend tests', ['postgres', 'redis'], { searchPath: empty });
  assert.match(line ?? '', /^skipped: shared-backend tests \(needs .*initdb.*redis-server.*; install with: apt-get install -y postgresql redis-server\)$/);
  assert.equal(line?.includes('\n'), false, 'one line');
  assert.match(skipReason('x', ['redis'], { searchPath: empty }) ?? '', /apt-get install -y redis-server\)$/);
  await assert.rejects(startPostgres({ searchPath: empty }), /PostgreSQL is not available: .*initdb/);
  await assert.rejects(startRedis({ searchPath: empty }), /Redis is not available: redis-server/);
});

test('with the binaries: no skip', { skip: skipPostgres || skipRedis }, () => {
  assert.equal(skipReason('x', ['postgres', 'redis']), undefined);
});

test('PostgreSQL: query, stop, start on the same port with the data, kill, pause, close', { skip: skipPostgres }, async (t) => {
  const t0 = performance.now();
  const pg = await startPostgres({ t });
  t.diagnostic(`initdb + start + CREATE DATABASE: ${Math.round(performance.now() - t0)} ms`);
  assert.match(pg.url, /^postgres:\/\/postgres@127\.0\.0\.1:\d+\/petstore$/);
  const port = pg.port;
  const sql = postgres(pg.url, { max: 2, connect_timeout: 2, onnotice: () => {} });
  t.after(() => sql.end({ timeout: 0 }));

  await sql`CREATE TABLE pets (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, name text NOT NULL)`;
  const [row] = await sql.begin((tx) => tx`INSERT INTO pets (name) VALUES (${'Rex'}) RETURNING id`);
  assert.equal(String(row?.id), '1');

  let t1 = performance.now();
  await pg.stop();
  t.diagnostic(`stop (SIGINT, fast shutdown): ${Math.round(performance.now() - t1)} ms`);
  assert.equal(pg.running, false);
  // Refused, or (when the driver has not yet seen its idle connection close) closed under it.
  await assert.rejects(sql`SELECT 1`, (err: NodeJS.ErrnoException) => err.code === 'ECONNREFUSED' || err.code === 'CONNECTION_CLOSED');

  t1 = performance.now();
  await pg.start();
  t.diagnostic(`start again: ${Math.round(performance.now() - t1)} ms`);
  assert.equal(pg.port, port, 'same port');
  // The driver reconnects by itself on the next query; the committed row survived.
  assert.deepEqual((await sql`SELECT name FROM pets`).map((r) => r.name), ['Rex']);

  await sql`INSERT INTO pets (name) VALUES ('Tom')`;
  await pg.kill();
  assert.equal(pg.running, false);
  t1 = performance.now();
  await pg.start();
  t.diagnostic(`start after SIGKILL (crash recovery): ${Math.round(performance.now() - t1)} ms`);
  assert.deepEqual((await sql`SELECT name FROM pets ORDER BY id`).map((r) => r.name), ['Rex', 'Tom'], 'a commit survives a kill');
  assert.equal(await pg.psql('SELECT count(*) FROM pets'), '2\n');

  // Paused: the connection stays open and nothing answers; postgres.js has no query timeout.
  pg.pause();
  const stuck = sql`SELECT 1 AS one`.then((r) => r[0]?.one);
  const raced = await Promise.race([stuck, new Promise((r) => setTimeout(() => r('no answer'), 300))]);
  assert.equal(raced, 'no answer');
  pg.resume();
  assert.equal(await stuck, 1, 'the query completes after resume');

  await sql.end({ timeout: 1 });
  await pg.close();
  assert.equal(existsSync(pg.dir), false, 'directory removed');
  await pg.close();
});

test('Redis: script, stop fails commands at once, restart on the same port, pause times out, close', { skip: skipRedis }, async (t) => {
  const t0 = performance.now();
  const redis = await startRedis({ t });
  t.diagnostic(`start: ${Math.round(performance.now() - t0)} ms`);
  assert.match(redis.url, /^redis:\/\/127\.0\.0\.1:\d+\/0$/);
  const port = redis.port;
  // The settings the limiter needs: no offline queue (fail at once while disconnected), a short
  // command timeout (a hung server), a bounded reconnect delay.
  const client = new Redis(redis.url, {
    enableOfflineQueue: false,
    commandTimeout: 200,
    maxRetriesPerRequest: 0,
    connectTimeout: 500,
    retryStrategy: (times: number) => Math.min(25 * 2 ** times, 500),
  });
  client.on('error', () => {
    // Connection errors surface as rejected commands; the event only must not crash the test.
  });
  t.after(() => client.disconnect());
  client.defineCommand('bump', { numberOfKeys: 1, lua: "return redis.call('INCRBY', KEYS[1], ARGV[1])" });
  const bump = (key: string): Promise<number> => (client as unknown as { bump(k: string, n: number): Promise<number> }).bump(key, 1);
  await new Promise((resolve) => client.once('ready', resolve));

  assert.equal(await client.ping(), 'PONG');
  assert.equal(await bump('k'), 1);
  await client.script('FLUSH');
  assert.equal(await bump('k'), 2, 'EVALSHA falls back to EVAL after NOSCRIPT');

  let t1 = performance.now();
  await redis.stop();
  t.diagnostic(`stop (SIGTERM): ${Math.round(performance.now() - t1)} ms`);
  // At once: refused as offline (no queue), not after the 200 ms command timeout.
  await assert.rejects(client.ping(), (err: Error) => !/timed out/.test(err.message) && /enableOfflineQueue|writeable|closed/i.test(err.message));

  t1 = performance.now();
  await redis.start();
  t.diagnostic(`start again: ${Math.round(performance.now() - t1)} ms`);
  assert.equal(redis.port, port, 'same port');
  assert.equal(await waitForCommand(() => bump('k')), 1, 'reconnected; no persistence, so it starts empty');

  await redis.kill();
  await assert.rejects(client.ping());
  await redis.start();
  assert.equal(await waitForCommand(() => client.ping()), 'PONG');

  redis.pause();
  t1 = performance.now();
  await assert.rejects(client.ping(), /timed out/);
  const waited = performance.now() - t1;
  // Not before the 200 ms timeout (load can only make the measured wait longer).
  assert.ok(waited >= 150, `command timeout after ${Math.round(waited)} ms`);
  redis.resume();
  assert.equal(await waitForCommand(() => client.ping()), 'PONG');

  await redis.close();
  assert.equal(existsSync(redis.dir), false, 'directory removed');
});

test('a test process that exits without closing leaves no server and no directory', { skip: skipPostgres || skipRedis }, async () => {
  const script = `
    import { startPostgres } from ${JSON.stringify(new URL('./postgres.js', import.meta.url).href)};
    import { startRedis } from ${JSON.stringify(new URL('./redis.js', import.meta.url).href)};
    const pg = await startPostgres();
    const redis = await startRedis();
    console.log(JSON.stringify({ dirs: [pg.dir, redis.dir], port: [pg.port, redis.port] }));
    process.exit(3);
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => { stdout += d.toString(); });
  child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  assert.equal(code, 3, stderr);
  const { dirs, port } = JSON.parse(stdout) as { dirs: string[]; port: number[] };
  for (const dir of dirs) assert.equal(existsSync(dir), false, `${dir} removed`);
  for (const p of port) assert.equal(await waitForCommand(() => refused(p)), true, `nothing listens on ${p}`);
});

/** Retries `fn` up to the suite's bound (for a slow machine only): a reconnecting client answers after its next retry. */
async function waitForCommand<T>(fn: () => Promise<T>): Promise<T> {
  const end = Date.now() + UNTIL_MS;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (Date.now() > end) throw err;
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}

async function refused(port: number): Promise<boolean> {
  if (await accepts(port)) throw new Error(`port ${port} still accepts`);
  return true;
}

