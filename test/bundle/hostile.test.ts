// The harness and the process as a hostile or careless client sees them. Black-box, against
// the built bundle.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { startBundle, tempDir, testConfig, writeConfig, type Running } from '../helpers.js';
import { skipUnless } from '../support/engines.js';
import { startPostgres, type PostgresServer } from '../support/postgres.js';
import { startRedis, type RedisServer } from '../support/redis.js';

const ADMIN = 'admin-key-for-hostile-tests-0123';

/** One request on a connection of its own (no keep-alive pool), so that requests spread over workers. */
function once(url: string, opts: { method?: string; key?: string; body?: unknown } = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { connection: 'close' };
    if (opts.key !== undefined) headers.authorization = `Bearer ${opts.key}`;
    const body = opts.body === undefined ? undefined : JSON.stringify(opts.body);
    if (body !== undefined) headers['content-type'] = 'application/json';
    const req = request(url, { method: opts.method ?? 'GET', headers, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => { text += d; });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.setTimeout(10_000, () => req.destroy(new Error('no answer within 10 s')));
    req.end(body);
  });
}

describe('the clock across two workers', { skip: skipUnless('clock across --workers', ['postgres', 'redis']) }, () => {
  let pg: PostgresServer;
  let redis: RedisServer;
  let svc: Running;
  const admin = (method: string, path: string, body?: unknown): Promise<{ status: number; body: string }> =>
    once(`${svc.url.replace(/\/v1$/, '')}/__admin${path}`, { method, key: ADMIN, body });

  before(async () => {
    [pg, redis] = await Promise.all([startPostgres(), startRedis()]);
    const dir = tempDir();
    svc = await startBundle(['--config', writeConfig(dir, testConfig({ admin: { key: ADMIN } })), '--store', pg.url, '--limits', redis.url, '--workers', '2'], { cwd: dir });
  });
  after(async () => {
    if (svc !== undefined && svc.proc.exitCode === null) await svc.stop('SIGKILL');
    await Promise.all([pg?.close(), redis?.close()]);
  });

  test('concurrent advances, answered by both workers, all add up in every worker', async () => {
    for (let round = 0; round < 3; round++) {
      assert.equal((await admin('POST', '/reset')).status, 204);
      const moves = await Promise.all(Array.from({ length: 20 }, () => admin('POST', '/clock', { advanceMs: 1000 })));
      for (const m of moves) assert.equal(m.status, 200, m.body);
      for (let i = 0; i < 6; i++) {
        const clock = JSON.parse((await admin('GET', '/clock')).body) as { offsetMs: number };
        assert.equal(clock.offsetMs, 20_000, `round ${round}: 20 advances of 1000 ms were each answered 200; a worker is ${clock.offsetMs} ms ahead`);
      }
    }
  });
});
