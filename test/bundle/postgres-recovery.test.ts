// Recovery after PostgreSQL or PgBouncer goes away under load, from the outside: clients keep
// creating while the engine is stopped (fast shutdown), killed (SIGKILL: an immediate stop
// and worse), or the pooler in front of it restarted. While it is away, /readyz is 503 with an
// Error body (and /healthz stays 200); once it answers, creates are 201 again and /readyz 200
// within about a second, no request waits past its timeout, and the log says "unreachable"
// and "answers again" once per outage, never alternating, never after the recovery.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { BUNDLE, KEYS, sleep, tempDir, testConfig, until, writeConfig } from '../support/bundle.js';
import { skipUnless } from '../support/engines.js';
import { pgbouncerMissing, startPgBouncer } from '../support/pgbouncer.js';
import { startPostgres } from '../support/postgres.js';

const skip = skipUnless('PostgreSQL recovery tests', ['postgres']);
const skipBouncer = skip || pgbouncerMissing() || false;
const CLIENTS = 6;
/** A create answered later than this is one that hung (query_timeout is 2 s in these tests). */
const HUNG_MS = 8_000;
/** "Within about a second", with room for a machine shared by the whole suite. */
const RECOVERY_BOUND_MS = 3_000;

interface Service { url: string; base: string; log: () => string; stderr: () => string; stop: () => Promise<void> }

async function startService(storeUrl: string): Promise<Service> {
  const dir = tempDir();
  const proc = spawn(process.execPath, [BUNDLE, '--port', '0', '--log-level', 'info', '--config', writeConfig(dir, testConfig()), '--store', storeUrl], {
    cwd: dir, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  proc.stdout.setEncoding('utf8');
  proc.stdout.on('data', (d: string) => { out += d; });
  proc.stderr.setEncoding('utf8');
  proc.stderr.on('data', (d: string) => { err += d; });
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  await until('the service listens', () => /petstore listening on http:\/\/\S+\/v1/.test(out));
  const url = /petstore listening on (http:\/\/\S+\/v1)/.exec(out)?.[1] as string;
  return {
    url, base: url.slice(0, -3), log: () => out, stderr: () => err,
    stop: async () => { proc.kill('SIGKILL'); await exited; },
  };
}

interface Outcome { at: number; status: number; ms: number }

/** CLIENTS loops of creates until stopped; every answer with when it came and how long it took. */
function load(svc: Service): { outcomes: Outcome[]; stop: () => Promise<void> } {
  const outcomes: Outcome[] = [];
  let running = true;
  const loops = Array.from({ length: CLIENTS }, async (_, c) => {
    for (let i = 0; running && i < 100_000; i++) {
      const started = performance.now();
      let status = 0;
      try {
        const res = await fetch(`${svc.url}/pets`, {
          method: 'POST',
          headers: { authorization: `Bearer ${KEYS.enterprise}`, 'content-type': 'application/json' },
          body: JSON.stringify({ name: `p${c}-${i}`, categoryId: c }),
          signal: AbortSignal.timeout(30_000),
        });
        await res.arrayBuffer();
        status = res.status;
      } catch {
        status = -1;
      }
      const at = performance.now();
      outcomes.push({ at, status, ms: at - started });
      if (status !== 201) await sleep(20);
    }
  });
  return { outcomes, stop: async () => { running = false; await Promise.all(loops); } };
}

async function ready(svc: Service): Promise<{ status: number; body: string }> {
  const res = await fetch(`${svc.base}/readyz`, { signal: AbortSignal.timeout(30_000) });
  return { status: res.status, body: await res.text() };
}

const lines = (log: string, msg: string): number => log.split('\n').filter((l) => l.includes(`"msg":"${msg}`)).length;

/** What the test did, when (ms since the epoch), for the timeline of a failure. */
const events: Array<{ time: number; line: string }> = [];
const mark = (what: string): void => { events.push({ time: Date.now(), line: `test: ${what}` }); };
const marked = (what: string, step: () => Promise<void>) => async (): Promise<void> => {
  mark(`${what}...`);
  await step();
  mark(`${what} done`);
};

/**
 * The service's lines other than request logs, the engine's log and the test's own steps, in
 * time order: what a wrong count of outage lines is read against.
 */
function timeline(svc: Service, engineLog = ''): string {
  const all = [...events];
  for (const l of svc.log().split('\n')) {
    const m = /^\{"level":(\d+),"time":(\d+)/.exec(l);
    if (m !== null && (Number(m[1]) >= 40 || /PostgreSQL|store/.test(l))) all.push({ time: Number(m[2]), line: `svc: ${l.slice(0, 400)}` });
  }
  for (const l of svc.stderr().split('\n')) if (l.trim() !== '') all.push({ time: Number.NaN, line: `svc stderr: ${l.slice(0, 400)}` });
  for (const l of engineLog.split('\n')) {
    const m = /^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) UTC/.exec(l);
    if (m !== null) all.push({ time: Date.parse(`${(m[1] as string).replace(' ', 'T')}Z`), line: `engine: ${l.slice(0, 300)}` });
  }
  const t0 = events[0]?.time ?? 0;
  return all.sort((a, b) => a.time - b.time).map((e) => `${Number.isNaN(e.time) ? '?' : e.time - t0} ${e.line}`).join('\n');
}

/**
 * One outage: `down()` while the load runs, /readyz red meanwhile, then `up()`; resolves with
 * ms from the engine answering to the first 201 and to /readyz 200.
 */
async function outage(svc: Service, outcomes: Outcome[], down: () => Promise<void>, up: () => Promise<void>): Promise<{ firstCreate: number; ready: number }> {
  await until('creates are answered 201', () => outcomes.some((o) => o.status === 201));
  assert.equal((await ready(svc)).status, 200);
  await down();
  await until('/readyz is red while the store is away', async () => (await ready(svc)).status === 503);
  const red = await ready(svc);
  const body = JSON.parse(red.body) as { code: string; message: string; status: number };
  assert.equal(body.code, 'service_unavailable');
  assert.equal(body.status, 503);
  assert.match(body.message, /store cannot be reached/);
  assert.equal((await fetch(`${svc.base}/healthz`)).status, 200, '/healthz is liveness: still 200');
  await sleep(1000);
  await up();
  const back = performance.now();
  let readyAt = 0;
  await until('/readyz is green again', async () => {
    if ((await ready(svc)).status !== 200) return false;
    readyAt = performance.now();
    return true;
  });
  await until('a create is answered 201 again', () => outcomes.some((o) => o.at > back && o.status === 201));
  const first = outcomes.find((o) => o.at > back && o.status === 201) as Outcome;
  return { firstCreate: Math.round(first.at - back), ready: Math.round(readyAt - back) };
}

function checkAfter(svc: Service, outcomes: Outcome[], outages: number, figures: Array<{ firstCreate: number; ready: number }>, what: string, engineLog?: () => string): void {
  const hung = outcomes.filter((o) => o.ms > HUNG_MS);
  assert.deepEqual(hung, [], 'no create waited past its timeout');
  assert.deepEqual(outcomes.filter((o) => o.status !== 201 && o.status !== 503), [], 'every answer a 201 or a 503');
  for (const f of figures) {
    assert.ok(f.firstCreate < RECOVERY_BOUND_MS && f.ready < RECOVERY_BOUND_MS, `${what}: back within about a second: ${JSON.stringify(figures)}`);
  }
  checkLines(svc, outages, engineLog);
}

function checkLines(svc: Service, outages: number, engineLog?: () => string): void {
  const log = svc.log();
  const counts = { unreachable: lines(log, 'PostgreSQL unreachable'), back: lines(log, 'PostgreSQL answers again') };
  const context = counts.unreachable === outages && counts.back === outages ? '' : `\n${timeline(svc, engineLog?.())}`;
  assert.equal(counts.unreachable, outages, `one "unreachable" line per outage${context}`);
  assert.equal(counts.back, outages, `one "answers again" line per outage${context}`);
}

test('PostgreSQL stopped (fast) and killed under load: /readyz red meanwhile, creates and /readyz back within about a second', { skip }, async (t) => {
  events.length = 0;
  const pg = await startPostgres({ t });
  const svc = await startService(`${pg.url}?query_timeout=2000&connect_timeout=2`);
  t.after(() => svc.stop());
  const { outcomes, stop } = load(svc);
  try {
    const figures = [
      await outage(svc, outcomes, marked('fast stop', () => pg.stop()), marked('start', () => pg.start())),
      await outage(svc, outcomes, marked('kill', () => pg.kill()), marked('start', () => pg.start())),
    ];
    // Steady load after the recovery: no late "unreachable".
    await sleep(3000);
    await stop();
    t.diagnostic(`ms from PostgreSQL answering to the first 201 / to /readyz 200: fast stop ${figures[0]?.firstCreate} / ${figures[0]?.ready}, kill ${figures[1]?.firstCreate} / ${figures[1]?.ready}`);
    checkAfter(svc, outcomes, 2, figures, 'PostgreSQL', () => pg.log());
  } finally {
    await stop();
  }
});

test('PgBouncer restarted under load: /readyz red meanwhile, creates and /readyz back within about a second', { skip: skipBouncer }, async (t) => {
  events.length = 0;
  const pg = await startPostgres({ t });
  const bouncer = await startPgBouncer({ t, serverPort: pg.port, database: pg.database });
  const svc = await startService(`${bouncer.url}?query_timeout=2000&connect_timeout=2`);
  t.after(() => svc.stop());
  const { outcomes, stop } = load(svc);
  try {
    const figures = [await outage(svc, outcomes, marked('PgBouncer stop', () => bouncer.stop()), marked('PgBouncer start', () => bouncer.start()))];
    await sleep(3000);
    await stop();
    t.diagnostic(`ms from PgBouncer answering to the first 201 / to /readyz 200: ${figures[0]?.firstCreate} / ${figures[0]?.ready}`);
    checkAfter(svc, outcomes, 1, figures, 'PgBouncer');
  } finally {
    await stop();
  }
});
