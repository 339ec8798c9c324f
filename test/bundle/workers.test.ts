// --workers N from the outside: the bundle started with two workers on a real PostgreSQL and a
// real Redis serves as one service on one port (one ready line, requests spread over both
// workers, one day budget, unique ascending ids, one scrape summing both, faults armed in
// both); a SIGKILLed worker loses no acknowledged pet and is restarted with a growing delay;
// SIGHUP reaches every worker; SIGTERM stops all with exit 0. Without both backends, or with a
// bad N, it is a usage error (exit 2); the embedding API refuses workers.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, readlinkSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { join } from 'node:path';
import { startPetstore } from '../../src/server/start.js';
import { StartError } from '../../src/core/index.js';
import { KEYS, runBundle, startBundle, tempDir, testConfig, writeConfig, type Running, once, type Answer } from '../support/bundle.js';
import { skipUnless } from '../support/engines.js';
import { freePort, sleep } from '../support/free-port.js';
import { startPostgres, type PostgresServer } from '../support/postgres.js';
import { startRedis, type RedisServer } from '../support/redis.js';
import { until } from '../support/wait.js';

const skip = skipUnless('--workers black-box tests', ['postgres', 'redis']);
const DAY40 = 'day40-workers-key';
const ADMIN = 'admin-workers-key';
const LATE = 'late-workers-key';
const baseConfig = (extra: Record<string, unknown> = {}): Record<string, unknown> => testConfig({
  keys: [
    ...(testConfig().keys as unknown[]),
    { key: DAY40, plan: 'enterprise', name: 'day40', limits: { perMinute: 1000, perDay: 40 } },
  ],
  metrics: true,
  admin: { key: ADMIN },
  ...extra,
});


/** The worker an answer came from: the random prefix of its request ids (one per app instance). */
const workerOf = (a: Answer): string => String(a.headers['x-request-id']).split('-')[0] ?? '';

function logLines(p: Running): Array<Record<string, unknown>> {
  return p.stdout().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);
}

function workerPids(p: Running): number[] {
  const line = logLines(p).find((l) => l.msg === 'workers started') as { workers?: Array<{ workerPid: number }> } | undefined;
  return (line?.workers ?? []).map((w) => w.workerPid);
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

async function allPetIds(url: string): Promise<number[]> {
  const ids: number[] = [];
  let cursor = 0;
  for (;;) {
    const page = await once(`${url}/pets?limit=100&cursor=${cursor}`, { key: KEYS.enterprise });
    assert.equal(page.status, 200, page.body);
    const pets = JSON.parse(page.body) as Array<{ id: number }>;
    if (pets.length === 0) return ids;
    ids.push(...pets.map((p) => p.id));
    cursor = pets.at(-1)?.id ?? cursor;
  }
}

describe('--workers: usage errors (no engines needed)', () => {
  const cases: Array<{ name: string; args: string[]; env?: NodeJS.ProcessEnv; config?: Record<string, unknown>; why: RegExp }> = [
    { name: 'without a store or limits URL', args: ['--workers', '2'], why: /2 workers need a store URL \(--store, PETSTORE_STORE or "store"\) and a limits URL \(--limits, PETSTORE_LIMITS or "limits"\): one data file has one writer/ },
    { name: 'with a data file', args: ['--workers', '2', '--data', 'pets.json', '--limits', 'redis://127.0.0.1:1/0'], why: /2 workers need a store URL .*: one data file has one writer/ },
    { name: 'with a store but no limits', args: ['--workers', '3', '--store', 'postgres://u@127.0.0.1:1/db'], why: /3 workers need a limits URL .*limits kept in each process would multiply every budget/ },
    { name: 'from the environment', args: [], env: { PETSTORE_WORKERS: '2' }, why: /2 workers need a store URL/ },
    { name: 'from the config', args: [], config: { workers: 2 }, why: /2 workers need a store URL/ },
    { name: '0', args: ['--workers', '0'], why: /--workers must be a whole number from 1 to 64, got "0"/ },
    { name: '65', args: ['--workers', '65'], why: /--workers must be a whole number from 1 to 64, got "65"/ },
    { name: 'not a number', args: [], env: { PETSTORE_WORKERS: 'two' }, why: /PETSTORE_WORKERS must be a whole number from 1 to 64, got "two"/ },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      const dir = tempDir();
      const config = writeConfig(dir, baseConfig(c.config ?? {}));
      const r = await runBundle(['--config', config, '--port', '0', ...c.args], { cwd: dir, env: c.env });
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, c.why);
      assert.equal(r.stdout, '');
    });
  }

  it('--workers 1 is the one process of before', async () => {
    const dir = tempDir();
    const p = await startBundle(['--config', writeConfig(dir, baseConfig()), '--memory', '--workers', '1'], { cwd: dir });
    assert.equal((await once(`${p.url}/pets`, { key: KEYS.free })).status, 200);
    assert.equal(await p.stop(), 0);
  });

  it('startPetstore refuses workers with a StartError that says why', async () => {
    await assert.rejects(startPetstore({ port: 0, config: baseConfig({ workers: 2 }) }), (err: unknown) =>
      err instanceof StartError && err.kind === 'config' && /workers is for the command line/.test(err.message));
  });
});

describe('--workers 2 on PostgreSQL and Redis', { skip }, () => {
  let pg: PostgresServer;
  let redis: RedisServer;
  let dir: string;
  let config: string;
  let svc: Running;

  before(async () => {
    [pg, redis] = await Promise.all([startPostgres(), startRedis()]);
    dir = tempDir();
    config = writeConfig(dir, baseConfig());
    svc = await startBundle(['--config', config, '--store', pg.url, '--limits', redis.url, '--workers', '2', '--log-level', 'info'], { cwd: dir });
  });
  after(async () => {
    if (svc !== undefined && svc.proc.exitCode === null) await svc.stop('SIGKILL');
    await Promise.all([pg?.close(), redis?.close()]);
  });

  it('prints one ready line, first, then the workers started line', async () => {
    assert.match(svc.stdout().split('\n')[0] ?? '', /^petstore listening on http:\/\/127\.0\.0\.1:\d+\/v1$/);
    await until('the workers started line', () => workerPids(svc).length === 2);
    assert.equal(svc.stdout().split('\n').filter((l) => l.startsWith('petstore listening')).length, 1);
    for (const pid of workerPids(svc)) assert.ok(alive(pid));
  });

  it('each worker keeps one batch of creates in flight: the command line\'s worker count reaches the store, which the config file does not hold', async () => {
    await until('both workers opened the store', () => svc.stdout().split('\n').filter((l) => l.includes('"store opened"')).length === 2);
    const opened = svc.stdout().split('\n').filter((l) => l.includes('"store opened"')).map((l) => JSON.parse(l) as { createBatchesInFlight?: number });
    assert.deepEqual(opened.map((l) => l.createBatchesInFlight), [1, 1], svc.stdout());
  });

  it('under concurrent load the access lines of both workers on the one stdout are whole lines, none cut by another', async () => {
    // Long lines (a user agent of 1,500 characters, one not ASCII: node's client sends it as
    // Latin-1, the server reads it so, the line has it in UTF-8), so that a batch is several
    // pipe-atomic pieces, from many connections at once, so that both workers write together.
    const agentText = `load-${'u'.repeat(1500)}-\u00e9`;
    const agent = new Agent({ keepAlive: true, maxSockets: 32 });
    const get = (): Promise<void> => new Promise((resolve, reject) => {
      const req = request(`${svc.url}/pets?limit=1`, { agent, headers: { authorization: `Bearer ${KEYS.enterprise}`, 'user-agent': agentText } }, (res) => {
        res.resume();
        res.on('end', resolve);
      });
      req.on('error', reject);
      req.end();
    });
    try {
      await Promise.all(Array.from({ length: 400 }, get));
    } finally {
      agent.destroy();
    }
    const ours = (): Array<Record<string, unknown>> => logLines(svc).filter((l) => (l.req as { headers?: Record<string, string> } | undefined)?.headers?.['user-agent'] === agentText);
    await until('400 access lines', () => ours().length >= 400);
    for (const line of svc.stdout().split('\n')) {
      if (line === '' || line.startsWith('petstore listening')) continue;
      assert.doesNotThrow(() => JSON.parse(line), `a line cut or mixed: ${line.slice(0, 120)}...${line.slice(-120)}`);
    }
    assert.equal(ours().length, 400);
    assert.equal(new Set(ours().map((l) => l.pid)).size, 2, 'both workers logged');
  });

  it('spreads requests over both workers', async () => {
    const seen = new Set<string>();
    for (let i = 0; i < 20; i++) seen.add(workerOf(await once(`${svc.url}/pets`, { key: KEYS.enterprise })));
    assert.equal(seen.size, 2, [...seen].join());
  });

  it('a key with a day budget of 40 gets exactly 40 across the workers, Remaining counting down', async () => {
    const remaining: string[] = [];
    const workers = new Set<string>();
    let refused = 0;
    for (let i = 0; i < 50; i++) {
      const a = await once(`${svc.url}/pets`, { key: DAY40 });
      if (a.status === 200) {
        remaining.push(String(a.headers['x-ratelimit-remaining']));
        workers.add(workerOf(a));
      } else {
        assert.equal(a.status, 429, a.body);
        refused++;
      }
    }
    assert.deepEqual(remaining, Array.from({ length: 40 }, (_, i) => String(39 - i)));
    assert.equal(refused, 10);
    assert.equal(workers.size, 2);
  });

  it('40 concurrent creates get 40 unique ids, listed in ascending order', async () => {
    const before = await allPetIds(svc.url);
    const answers = await Promise.all(Array.from({ length: 40 }, (_, i) =>
      once(`${svc.url}/pets`, { method: 'POST', key: KEYS.enterprise, body: { name: `w${i}`, categoryId: 1 } })));
    assert.deepEqual(answers.map((a) => a.status), Array(40).fill(201));
    assert.equal(new Set(answers.map(workerOf)).size, 2, 'both workers created some');
    const ids = answers.map((a) => (JSON.parse(a.body) as { id: number }).id);
    assert.equal(new Set(ids).size, 40);
    const max = Math.max(0, ...before);
    assert.ok(ids.every((id) => id > max && Number.isSafeInteger(id)));
    const after = await allPetIds(svc.url);
    assert.deepEqual(after, [...after].sort((x, y) => x - y));
    assert.deepEqual(after.slice(before.length), [...ids].sort((x, y) => x - y));
  });

  it('one scrape sums both workers, whichever answers it', async () => {
    const scrape = async (): Promise<number> => {
      const text = (await once(svc.url.replace(/\/v1$/, '/metrics'))).body;
      const m = /^petstore_http_requests_total\{operation="listPets",status="200"\} (\d+)$/m.exec(text);
      return Number(m?.[1] ?? 0);
    };
    const start = await scrape();
    const served = new Set<string>();
    for (let i = 0; i < 10; i++) served.add(workerOf(await once(`${svc.url}/pets`, { key: KEYS.enterprise })));
    assert.equal(served.size, 2);
    // A scrape is made at most once a second (shared by every worker): past that window, two
    // scrapes in a row land on both workers, and each sees the whole service.
    await sleep(1_100);
    assert.equal(await scrape(), start + 10);
    assert.equal(await scrape(), start + 10);
  });

  it('a flood of concurrent scrapes through both workers costs one gather per second, not one each', async () => {
    const url = svc.url.replace(/\/v1$/, '/metrics');
    await sleep(1_100); // past the last test's window
    const texts: string[] = [];
    for (let round = 0; round < 3; round++) {
      const answers = await Promise.all(Array.from({ length: 60 }, () => once(url)));
      for (const a of answers) {
        assert.equal(a.status, 200);
        texts.push(a.body);
      }
    }
    // Every gather makes new text (the CPU seconds, memory and uptime move): 180 scrapes
    // made one each would give about 180 texts; shared, as many as windows went by.
    const distinct = new Set(texts).size;
    assert.ok(distinct <= 12, `${distinct} different texts in 180 scrapes`);
  });

  it('a fault set through one worker is armed in both, and counts once for the service', async () => {
    const set = await once(svc.url.replace(/\/v1$/, '/__admin/faults'), { method: 'POST', key: ADMIN, body: { operation: 'listPets', status: 503, count: 3 } });
    assert.equal(set.status, 200, set.body);
    const answers: Answer[] = [];
    for (let i = 0; i < 6; i++) answers.push(await once(`${svc.url}/pets`, { key: KEYS.enterprise }));
    assert.deepEqual(answers.map((a) => a.status), [503, 503, 503, 200, 200, 200]);
    assert.equal(new Set(answers.slice(0, 3).map(workerOf)).size, 2, 'both workers faulted');
  });

  it('SIGKILL of a worker under concurrent creates loses no acknowledged pet; it is restarted with a growing delay', async () => {
    const [victim] = workerPids(svc);
    assert.ok(victim !== undefined);
    const acknowledged: number[] = [];
    let failed = 0;
    let stopAt = Date.now() + 60_000;
    const client = async (c: number): Promise<void> => {
      for (let i = 0; Date.now() < stopAt; i++) {
        try {
          const a = await once(`${svc.url}/pets`, { method: 'POST', key: KEYS.enterprise, body: { name: `k${c}-${i}`, categoryId: 2 } });
          if (a.status === 201) acknowledged.push((JSON.parse(a.body) as { id: number }).id);
          else failed++;
        } catch {
          failed++; // the connection went with the worker: not acknowledged
        }
      }
    };
    const clients = Array.from({ length: 6 }, (_, c) => client(c));
    await until('some creates', () => acknowledged.length >= 30);
    process.kill(victim, 'SIGKILL');
    await until('the restart', () => logLines(svc).some((l) => l.msg === 'worker restarted'));
    const after = acknowledged.length;
    await until('creates after the restart', () => acknowledged.length >= after + 30);
    stopAt = 0;
    await Promise.all(clients);
    const stored = new Set(await allPetIds(svc.url));
    assert.deepEqual(acknowledged.filter((id) => !stored.has(id)), [], `every acknowledged pet is stored (${failed} requests failed)`);
    const exits = (): Array<Record<string, unknown>> => logLines(svc).filter((l) => l.msg === 'worker exited; restarting it');
    const exit = exits()[0];
    assert.equal(exit?.signal, 'SIGKILL');
    assert.equal(exit?.workerPid, victim);
    assert.equal(exit?.restartInMs, 100, 'the first death is restarted after the shortest delay');
    // Each restarted worker killed at once: a death within 10 s of its start follows a death
    // within 10 s of its start, so the next start waits twice as long. Whether a death was
    // quick is the primary's to say (livedMs: the tests before, and the creates above, take
    // longer on a busy machine), so the delays are checked against the rule for the lifetimes
    // it logged, and killing goes on until two quick deaths in a row have shown the growth.
    for (let k = 0; k < 4 && !exits().some((l) => l.restartInMs === 200); k++) {
      const restarted = logLines(svc).filter((l) => l.msg === 'worker restarted').at(-1)?.workerPid as number;
      process.kill(restarted, 'SIGKILL');
      await until('the next restart', () => logLines(svc).filter((l) => l.msg === 'worker restarted').length === k + 2);
    }
    let quick = 0;
    const rule = exits().map((l) => {
      assert.equal(typeof l.livedMs, 'number');
      quick = (l.livedMs as number) < 10_000 ? quick + 1 : 0;
      return Math.min(100 * 2 ** Math.max(0, quick - 1), 30_000);
    });
    assert.deepEqual(exits().map((l) => l.restartInMs), rule, `delays for lifetimes ${JSON.stringify(exits().map((l) => l.livedMs))}`);
    assert.ok(rule.includes(200), 'a quick death after a quick death doubles the delay');
    const seen = new Set<string>();
    await until('both workers serve again', async () => {
      seen.add(workerOf(await once(`${svc.url}/pets`, { key: KEYS.enterprise })));
      return seen.size >= 2;
    });
  });

  it('SIGHUP reaches every worker: a key added to the config works through each', async () => {
    assert.equal((await once(`${svc.url}/pets`, { key: LATE })).status, 401);
    writeConfig(dir, baseConfig({ keys: [...(baseConfig().keys as unknown[]), { key: LATE, plan: 'free', name: 'late' }] }));
    svc.proc.kill('SIGHUP');
    await until('two reload lines', () => (svc.stderr().match(/config reloaded from/g) ?? []).length >= 2);
    const ok = new Set<string>();
    for (let i = 0; i < 20; i++) {
      const a = await once(`${svc.url}/pets`, { key: LATE });
      assert.equal(a.status, 200, a.body);
      ok.add(workerOf(a));
    }
    assert.ok(ok.size >= 2, 'answered 200 by every worker');
  });

  it('SIGTERM stops every worker and exits 0', async () => {
    const pids = logLines(svc).flatMap((l) => (l.msg === 'worker restarted' ? [l.workerPid as number] : [])).concat(workerPids(svc)).filter(alive);
    assert.equal(pids.length, 2);
    assert.equal(await svc.stop('SIGTERM'), 0, svc.stderr());
    assert.deepEqual(pids.filter(alive), []);
    assert.match(svc.stderr(), /SIGTERM received, stopping 2 workers/);
  });

  it('a worker that cannot start stops the start: exit 1, its message, nothing left listening', async () => {
    const port = await freePort();
    const r = await runBundle(['--config', config, '--port', String(port), '--store', `postgres://postgres@127.0.0.1:${await freePort()}/x`, '--limits', redis.url, '--workers', '2'], { cwd: dir });
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /worker 1: .*PostgreSQL/i);
    assert.match(r.stderr, /worker 1 could not start \(exit code 1\); stopping/);
    assert.equal(r.stdout, '');
  });

  it('--store without --limits in one process warns that limits start full at a restart; limitsFile keeps them', async () => {
    const p = await startBundle(['--config', config, '--store', pg.url, '--log-level', 'warn'], { cwd: dir });
    await until('the warn line', () => /rate limits are kept in this process only/.test(p.stdout()));
    assert.equal(await p.stop(), 0);
    const withFile = writeConfig(tempDir(), baseConfig({ limitsFile: join(dir, 'limits.json') }));
    const q = await startBundle(['--config', withFile, '--store', pg.url, '--log-level', 'warn'], { cwd: dir });
    assert.equal((await once(`${q.url}/pets`, { key: KEYS.free })).status, 200);
    assert.equal(await q.stop(), 0);
    assert.doesNotMatch(q.stdout(), /rate limits are kept in this process only/);
  });
});

/** The sockets of `pid` connected to 127.0.0.1:`port` (from /proc): a start waiting on that engine. */
function connectedTo(pid: number, port: number): boolean {
  let inodes: Set<string>;
  try {
    inodes = new Set(readdirSync(`/proc/${pid}/fd`).flatMap((fd) => {
      try {
        const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
        return m ? [m[1] as string] : [];
      } catch {
        return [];
      }
    }));
  } catch {
    return false;
  }
  const hex = port.toString(16).toUpperCase().padStart(4, '0');
  return readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1).some((line) => {
    const f = line.trim().split(/\s+/);
    return f[2] === `0100007F:${hex}` && inodes.has(f[9] as string);
  });
}

/** The pids of the processes whose parent is `pid`. */
function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter((s) => s !== '').map(Number);
  } catch {
    return [];
  }
}

describe('--workers 2: a reload reaches a worker that is starting', { skip }, () => {
  it('Redis paused, a worker killed and restarting, a key revoked and SIGHUP: the new worker never accepts the key', async (t) => {
    const [pg, redis] = await Promise.all([startPostgres({ t }), startRedis({ t })]);
    const dir = tempDir();
    const withKey = baseConfig({ keys: [...(baseConfig().keys as unknown[]), { key: LATE, plan: 'pro', name: 'late' }] });
    const config = writeConfig(dir, withKey);
    const svc = await startBundle(['--config', config, '--store', pg.url, '--limits', redis.url, '--workers', '2', '--log-level', 'info'], { cwd: dir });
    t.after(() => svc.proc.kill('SIGKILL'));
    await until('the workers started line', () => workerPids(svc).length === 2);
    assert.equal((await once(`${svc.url}/pets`, { key: LATE })).status, 200);
    const [victim, survivor] = workerPids(svc) as [number, number];
    const primary = svc.proc.pid as number;
    // Redis paused: the restarted worker's start waits on it, its config already read.
    redis.pause();
    let resumed = false;
    t.after(() => { if (!resumed) redis.resume(); });
    process.kill(victim, 'SIGKILL');
    let starting = 0;
    await until('the new worker waiting on Redis', () => {
      starting = childrenOf(primary).find((p) => p !== victim && p !== survivor) ?? 0;
      return starting !== 0 && connectedTo(starting, redis.port);
    });
    writeConfig(dir, baseConfig()); // the key revoked
    svc.proc.kill('SIGHUP');
    await until('the running worker reloaded', () => /worker \d+: config reloaded from/.test(svc.stderr()));
    redis.resume();
    resumed = true;
    await until('the restart', () => logLines(svc).some((l) => l.msg === 'worker restarted'), 30_000);
    const served = new Set<string>();
    const statuses: number[] = [];
    for (let i = 0; i < 40; i++) {
      const a = await once(`${svc.url}/pets`, { key: LATE });
      statuses.push(a.status);
      served.add(workerOf(a));
    }
    assert.equal(served.size, 2, 'both workers answered');
    assert.deepEqual(statuses.filter((s) => s !== 401), [], `the revoked key got ${statuses.filter((s) => s === 200).length} 200s`);
    assert.match(svc.stderr(), /before serving \(a SIGHUP came while this worker started\)/);
    assert.equal(await svc.stop(), 0, svc.stderr());
  });
});
