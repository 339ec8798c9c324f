// The journal and the clock across `--workers 2` with limits in Redis (pets in PostgreSQL):
// every journal answer covers both workers in time order, a clock move reaches both workers
// and the Redis limiter's script before it is answered, and snapshots say why they cannot be had.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { KEYS, startBundle, tempDir, testConfig, writeConfig, type Running, once, type Answer } from '../support/bundle.js';
import { skipUnless } from '../support/engines.js';
import { startPostgres, type PostgresServer } from '../support/postgres.js';
import { startRedis, type RedisServer } from '../support/redis.js';

const skip = skipUnless('harness across --workers', ['postgres', 'redis']);
const ADMIN = 'admin-harness-workers-key';
const SLOW = 'slow-harness-workers-key';

const workerOf = (requestId: string): string => requestId.split('-')[0] ?? '';

describe('journal and clock across two workers with Redis limits', { skip }, () => {
  let pg: PostgresServer;
  let redis: RedisServer;
  let svc: Running;
  const admin = (method: string, path: string, body?: unknown): Promise<Answer> =>
    once(`${svc.url.replace(/\/v1$/, '')}/__admin${path}`, { method, key: ADMIN, body });

  before(async () => {
    [pg, redis] = await Promise.all([startPostgres(), startRedis()]);
    const dir = tempDir();
    const config = writeConfig(dir, testConfig({
      keys: [...(testConfig().keys as unknown[]), { key: SLOW, plan: 'free', name: 'slow', limits: { perMinute: 2, perDay: 1000 } }],
      admin: { key: ADMIN },
    }));
    svc = await startBundle(['--config', config, '--store', pg.url, '--limits', redis.url, '--workers', '2'], { cwd: dir });
  });
  after(async () => {
    if (svc !== undefined && svc.proc.exitCode === null) await svc.stop('SIGKILL');
    await Promise.all([pg?.close(), redis?.close()]);
  });

  it('every journal answer covers both workers, in time order; count and clear cover both', async () => {
    assert.equal((await admin('DELETE', '/requests')).status, 204);
    const sent: string[] = [];
    for (let i = 0; i < 20; i++) sent.push(String((await once(`${svc.url}/pets?i=${i}`, { key: KEYS.enterprise })).headers['x-request-id']));
    assert.equal(new Set(sent.map(workerOf)).size, 2, 'both workers answered');
    const page = await admin('GET', '/requests?limit=1000');
    assert.equal(page.status, 200, page.body);
    const { requests } = JSON.parse(page.body) as { requests: Array<{ requestId: string; time: string; query: { i: string } }> };
    assert.deepEqual(requests.map((r) => r.requestId).sort(), [...sent].sort());
    const times = requests.map((r) => Date.parse(r.time));
    assert.deepEqual(times, [...times].sort((a, b) => a - b), 'in time order');
    assert.deepEqual(JSON.parse((await admin('GET', '/requests/count?path=/v1/pets')).body), { count: 20 });
    assert.equal((await admin('DELETE', '/requests')).status, 204);
    for (let i = 0; i < 4; i++) {
      assert.deepEqual(JSON.parse((await admin('GET', '/requests/count')).body), { count: 0 }, 'cleared in every worker');
    }
  });

  it('a clock move reaches both workers and the Redis limiter before it is answered; reset takes it back', async () => {
    let refused: Answer | undefined;
    for (let i = 0; i < 5 && refused === undefined; i++) {
      const a = await once(`${svc.url}/pets`, { key: SLOW });
      if (a.status === 429) refused = a;
    }
    assert.ok(refused, 'the per-minute budget of 2 runs out');
    const wait = Number(refused.headers['retry-after']);
    const moved = await admin('POST', '/clock', { advanceMs: (wait + 60) * 1000 });
    assert.equal(moved.status, 200, moved.body);
    for (let i = 0; i < 4; i++) {
      const clock = JSON.parse((await admin('GET', '/clock')).body) as { offsetMs: number };
      assert.equal(clock.offsetMs, (wait + 60) * 1000, 'every worker has the offset');
    }
    const served = await once(`${svc.url}/pets`, { key: SLOW });
    assert.equal(served.status, 200, `refilled in Redis by moved time: ${served.body}`);
    assert.equal((await admin('POST', '/reset')).status, 204);
    for (let i = 0; i < 4; i++) assert.equal((JSON.parse((await admin('GET', '/clock')).body) as { offsetMs: number }).offsetMs, 0);
  });

  it('snapshots answer 501 saying why: with workers, with pets in PostgreSQL, with limits in Redis', async () => {
    const res = await admin('PUT', '/snapshots/x');
    assert.equal(res.status, 501);
    assert.match(res.body, /PostgreSQL|--workers/);
    const dir = tempDir();
    const config = writeConfig(dir, testConfig({ admin: { key: ADMIN } }));
    for (const [args, why] of [[['--store', pg.url], /PostgreSQL/], [['--memory', '--limits', redis.url], /Redis/]] as const) {
      const one = await startBundle(['--config', config, ...args], { cwd: dir });
      try {
        for (const [method, path] of [['PUT', '/snapshots/x'], ['GET', '/snapshots'], ['POST', '/snapshots/x/restore']]) {
          const a = await once(`${one.url.replace(/\/v1$/, '')}/__admin${path}`, { method, key: ADMIN });
          assert.equal(a.status, 501, `${args.join(' ')} ${method} ${path}`);
          assert.match((JSON.parse(a.body) as { message: string }).message, why);
        }
        const clock = await once(`${one.url.replace(/\/v1$/, '')}/__admin/clock`, { method: 'POST', key: ADMIN, body: { advanceMs: 1000 } });
        assert.equal(clock.status, 200, 'the clock works there');
      } finally {
        await one.stop();
      }
    }
  });
});
