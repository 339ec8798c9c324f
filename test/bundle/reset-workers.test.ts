// A reset under load with the clock moved ahead, across `--workers 2` on PostgreSQL and Redis:
// the reset is one step for every process. Once it has answered, no worker charges the key on
// the old clock nor keeps a copy of its old state, so the key is served again on both workers
// within a few requests: never a ban stamped on the moved clock (whose Retry-After would be the
// whole offset), and no worker still banning it from its in-process copy when Redis then fails.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startBundle, tempDir, testConfig, until, writeConfig, type Running, once, type Answer } from '../support/bundle.js';
import { skipUnless } from '../support/engines.js';
import { startPostgres, type PostgresServer } from '../support/postgres.js';
import { startRedis, type RedisServer } from '../support/redis.js';

const skip = skipUnless('a reset across --workers under load', ['postgres', 'redis']);
const ADMIN = 'admin-reset-workers-key';
const FLOODED = 'flooded-free-key-0123';
const TEN_YEARS_MS = 315_360_000_000;
/** The config's ban (the default one): after 20 refusals in a row, 300 s. */
const BAN = { after: 20, seconds: 300 };
const CLIENTS = 48;
/** Requests per flooding client at most (a flood stops earlier once it has done its part). */
const PER_CLIENT = 300;
/** Requests after the reset within which the key must be served by both workers. */
const PROBES = 30;
const PETS_TABLE = 'petstore_pets';
/** How long the test's read may hold the pets table (s): it is cancelled much sooner. */
const HOLD_S = 30;
const HELD = `SELECT count(*) FROM pg_locks WHERE locktype = 'relation' AND relation = '${PETS_TABLE}'::regclass AND mode = 'ShareLock' AND granted`;
const CANCEL = `SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(${HOLD_S})%' AND pid <> pg_backend_pid()`;
/** Flood requests sent while the reset waits for the store: more than a ban takes (60 + 21). */
const WHILE_RESET = 150;

const workerOf = (a: Answer): string => String(a.headers['x-request-id']).split('-')[0] ?? '';
const codeOf = (a: Answer): string => {
  try {
    return (JSON.parse(a.body) as { code?: string }).code ?? '';
  } catch {
    return '';
  }
};
const show = (a: Answer): string => `${workerOf(a)}:${a.status}${a.status === 429 ? ` ${codeOf(a)} ${String(a.headers['retry-after'])}` : ''}`;

describe('a reset under load with the clock moved ahead, two workers, PostgreSQL and Redis', { skip }, () => {
  let pg: PostgresServer;
  let redis: RedisServer;
  let svc: Running;
  const admin = (method: string, path: string, body?: unknown): Promise<Answer> =>
    once(`${svc.url.replace(/\/v1$/, '')}/__admin${path}`, { method, key: ADMIN, body });
  const probe = (): Promise<Answer> => once(`${svc.url}/pets?limit=1`, { key: FLOODED });

  /**
   * 48 clients send requests of the flooded key, a connection each (so both workers get them),
   * until `done()` says stop or each has sent PER_CLIENT. `banned` holds the workers that have
   * answered temporarily_banned.
   */
  const flood = (done: (banned: ReadonlySet<string>) => boolean): { banned: Set<string>; firstBan: Promise<void>; end: Promise<number>; sent: () => number; done: () => boolean } => {
    const banned = new Set<string>();
    let sent = 0;
    let onBan: () => void = () => undefined;
    const firstBan = new Promise<void>((resolve) => { onBan = resolve; });
    const client = async (): Promise<void> => {
      for (let i = 0; i < PER_CLIENT && !done(banned); i++) {
        sent++;
        const a = await probe().catch(() => undefined);
        if (a !== undefined && codeOf(a) === 'temporarily_banned') {
          banned.add(workerOf(a));
          onBan();
        }
      }
    };
    let over = false;
    const end = Promise.all(Array.from({ length: CLIENTS }, client)).then(() => {
      over = true;
      return sent;
    });
    return { banned, firstBan, end, sent: () => sent, done: () => over };
  };

  /**
   * Up to PROBES requests of the flooded key, one at a time, until both workers have served it.
   * A 429 must be one the plan allows just after a reset (a refusal within the minute's refill,
   * or a ban no longer than its length, earned by the requests that came after the clear): the
   * clock is then moved past its Retry-After, as a harness would, and the next one is sent.
   * `strict`: no request came since the reset, so each one must be served.
   */
  const servedByBoth = async (strict = false): Promise<void> => {
    const seen: Answer[] = [];
    const served = new Set<string>();
    for (let i = 0; i < PROBES && served.size < 2; i++) {
      const a = await probe();
      seen.push(a);
      const trail = (): string => seen.map(show).join(', ');
      if (a.status === 200) {
        served.add(workerOf(a));
        continue;
      }
      assert.equal(a.status, 429, trail());
      assert.ok(!strict, `nothing since the reset could have used the key up: ${trail()}`);
      const wait = Number(a.headers['retry-after']);
      const most = codeOf(a) === 'rate_limited' ? 60 : BAN.seconds;
      assert.ok(['rate_limited', 'temporarily_banned'].includes(codeOf(a)), trail());
      assert.ok(wait >= 1 && wait <= most, `a Retry-After of at most ${most} s after the reset, not one of the moved clock: ${trail()}`);
      assert.equal((await admin('POST', '/clock', { advanceMs: wait * 1000 })).status, 200);
    }
    assert.equal(served.size, 2, `served by both workers within ${PROBES} requests: ${seen.map(show).join(', ')}`);
  };

  before(async () => {
    [pg, redis] = await Promise.all([startPostgres(), startRedis()]);
    const dir = tempDir();
    const config = writeConfig(dir, testConfig({
      keys: [...(testConfig().keys as unknown[]), { key: FLOODED, plan: 'free', name: 'flooded' }],
      ban: BAN,
      admin: { key: ADMIN },
    }));
    svc = await startBundle(['--config', config, '--store', pg.url, '--limits', redis.url, '--workers', '2'], { cwd: dir });
  });
  after(async () => {
    if (svc !== undefined && svc.proc.exitCode === null) await svc.stop('SIGKILL');
    await Promise.all([pg?.close(), redis?.close()]);
  });

  for (let round = 1; round <= 2; round++) {
    it(`round ${round}: a reset while 48 clients flood the key on a clock 10 years ahead; then served by both workers`, async () => {
      const moved = await admin('POST', '/clock', { advanceMs: TEN_YEARS_MS });
      assert.equal(moved.status, 200, moved.body);
      let stop = false;
      const f = flood(() => stop);
      // The flood has run the key into a ban on the moved clock; the reset comes while it runs.
      await Promise.race([f.firstBan, f.end]);
      assert.ok(f.banned.size > 0, 'the flood got the key banned before the reset');
      // A long read holds the pets table, so the reset's emptying of the store waits for it
      // while the flood goes on; it ends once the flood has sent WHILE_RESET requests more.
      const held = pg.psql(`BEGIN; LOCK TABLE ${PETS_TABLE} IN SHARE MODE; SELECT pg_sleep(${HOLD_S}); COMMIT;`).catch(() => 'cancelled');
      await until('the read holds the table', async () => (await pg.psql(HELD)).trim() === '1');
      const answered = admin('POST', '/reset');
      const sentBefore = f.sent();
      await until(`the flood sent ${WHILE_RESET} requests while the reset waits`, () => f.sent() - sentBefore >= WHILE_RESET || f.done());
      await pg.psql(CANCEL);
      const reset = await answered;
      stop = true;
      await Promise.all([f.end, held]);
      assert.equal(reset.status, 204, reset.body);
      for (let i = 0; i < 2; i++) {
        assert.equal((JSON.parse((await admin('GET', '/clock')).body) as { offsetMs: number }).offsetMs, 0, 'every worker is back at real time');
      }
      await servedByBoth();
    });
  }

  it('a reset clears every worker\'s copy of the limits: with Redis gone right after it, neither worker still bans the key', async () => {
    assert.equal((await admin('POST', '/reset')).status, 204);
    let stop = false;
    const f = flood((banned) => stop || banned.size === 2);
    await f.end;
    stop = true;
    assert.equal(f.banned.size, 2, 'both workers answered the ban (each keeps a copy of what Redis said)');
    assert.equal((await admin('POST', '/reset')).status, 204);
    await redis.stop();
    try {
      // Each worker now limits from its own copy: the reset cleared it, so the key is new there.
      await servedByBoth(true);
    } finally {
      await redis.start();
    }
  });
});
