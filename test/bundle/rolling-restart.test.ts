// Two instances behind load balancers through a rolling restart, as the deployment runbook
// (docs/deployment.md) runs them: each `petstore --workers 2` on one PostgreSQL and one Redis,
// behind nginx and haproxy at once, both configured by the runbook's own files
// (docs/deployment/nginx.conf, docs/deployment/haproxy.cfg; only the addresses and ports are
// replaced). While clients create pets with Idempotency-Keys (retrying a failure with the same
// key) and read pages through both proxies, one instance is sent SIGTERM and started again, a
// SIGHUP brings a key change to both, then the other instance is restarted. What the clients
// saw: no connection error and no 5xx, every acknowledged create a row exactly once, and after
// it a key with perMinute N gets exactly N through the proxies in a burst spread over all four
// processes. The keyless per-address budget charges the client's own address when the config
// trusts the proxy ("trustProxy": true), and the proxy's address when it does not.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { join } from 'node:path';
import { BUNDLE, ROOT, tempDir } from '../support/bundle.js';
import { skipUnless, track } from '../support/engines.js';
import { freePort } from '../support/free-port.js';
import { startPostgres, type PostgresServer } from '../support/postgres.js';
import { startHaproxy, startNginx, type ProxyServer } from '../support/proxy.js';
import { startRedis, type RedisServer } from '../support/redis.js';
import { sleep, until, UNTIL_MS } from '../support/wait.js';

const skip = skipUnless('the rolling restart behind nginx and haproxy', ['postgres', 'redis', 'nginx', 'haproxy']);

const KEY = { load: 'load-key-0123', burst: 'burst-key-0123', gone: 'gone-key-0123', late: 'late-key-0123' } as const;
/** The burst key's perMinute: exactly this many get through, whichever process answers. */
const BURST = 12;
/** The keyless budget per client address, per minute. */
const ANONYMOUS = 6;
/** Bounds of the client loops (they stop earlier, once the restarts are done). */
const CREATORS = 4;
const READERS = 2;
const MAX_PER_LOOP = 2_000;
const MAX_ATTEMPTS = 10;
/**
 * The bound of one instance's start and of each wait on the clients: only how long a broken run
 * takes to fail. Two workers opening PostgreSQL and Redis on two cores shared with a busy suite
 * took more than the suite's usual 30 s.
 */
const SLOW_MS = 3 * UNTIL_MS;

function config(opts: { late: boolean; trustProxy: boolean }): Record<string, unknown> {
  return {
    plans: { load: { perMinute: 1_000_000, perDay: 100_000_000 }, burst: { perMinute: BURST, perDay: 100_000 } },
    keys: [
      { key: KEY.load, plan: 'load', name: 'load' },
      { key: KEY.burst, plan: 'burst', name: 'burst' },
      // The SIGHUP in the middle revokes one key and adds another.
      ...(opts.late ? [{ key: KEY.late, plan: 'load', name: 'late' }] : [{ key: KEY.gone, plan: 'load', name: 'gone' }]),
    ],
    anonymous: { perMinute: ANONYMOUS, perDay: 100_000 },
    trustProxy: opts.trustProxy,
  };
}

/** One petstore instance (`--workers 2`) on a fixed port, started again on the same port. */
class Instance {
  #proc: ChildProcess | undefined;
  #exited: Promise<number | null> = Promise.resolve(null);
  #stderr = '';
  /** Worker pids that logged a request of the burst key. */
  readonly burstPids = new Set<number>();
  readonly #release: () => void;

  constructor(readonly name: string, readonly port: number, readonly args: readonly string[], readonly cwd: string) {
    this.#release = track({ hardStop: () => this.#proc?.kill('SIGKILL') });
  }

  get pid(): number | undefined {
    return this.#proc?.pid;
  }

  stderr(): string {
    return this.#stderr;
  }

  async start(): Promise<void> {
    const proc = spawn(process.execPath, [BUNDLE, ...this.args, '--port', String(this.port), '--log-level', 'info'], { cwd: this.cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    this.#proc = proc;
    this.#exited = new Promise((resolve) => proc.once('exit', (code) => resolve(code)));
    proc.stderr?.on('data', (d: Buffer) => { this.#stderr = (this.#stderr + d.toString()).slice(-256 * 1024); });
    let ready: () => void = () => undefined;
    const readyLine = new Promise<void>((resolve) => { ready = resolve; });
    let rest = '';
    proc.stdout?.on('data', (d: Buffer) => {
      const lines = (rest + d.toString()).split('\n');
      rest = lines.pop() ?? '';
      for (const line of lines) {
        if (line.startsWith('petstore listening on ')) ready();
        // Access lines name the key by its config name, with the worker's pid.
        else if (line.includes('"key":"burst"')) this.burstPids.add((JSON.parse(line) as { pid: number }).pid);
      }
    });
    const gone = this.#exited.then((code) => { throw new Error(`${this.name} exited at start (${String(code)}): ${this.#stderr}`); });
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(`${this.name}: no ready line in ${SLOW_MS} ms: ${this.#stderr}`)), SLOW_MS); });
    try {
      await Promise.race([readyLine, gone, late]);
    } finally {
      clearTimeout(timer);
      gone.catch(() => undefined);
    }
  }

  /** SIGTERM to the primary; resolves with its exit code. */
  async stop(): Promise<number | null> {
    this.#proc?.kill('SIGTERM');
    return this.#exited;
  }

  /** SIGHUP to the primary; resolves once both workers say they reloaded. */
  async reload(): Promise<void> {
    const before = this.#stderr.match(/config reloaded/g)?.length ?? 0;
    this.#proc?.kill('SIGHUP');
    await until(`${this.name}: both workers reloaded`, () => (this.#stderr.match(/config reloaded/g)?.length ?? 0) >= before + 2, SLOW_MS);
  }

  async close(): Promise<void> {
    if (this.#proc?.exitCode === null && this.#proc.signalCode === null) await this.stop();
    this.#release();
  }
}

interface Answer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly text: string;
}

/** One request; a connection error or a timeout resolves as `{ error }`. */
function call(
  base: string,
  method: string,
  path: string,
  opts: { key?: string; body?: unknown; idempotencyKey?: string; agent?: Agent; localAddress?: string } = {},
): Promise<Answer | { error: string }> {
  return new Promise((resolve) => {
    const body = opts.body === undefined ? undefined : JSON.stringify(opts.body);
    const req = request(`${base}${path}`, {
      method,
      agent: opts.agent ?? false,
      ...(opts.localAddress !== undefined ? { localAddress: opts.localAddress } : {}),
      headers: {
        ...(opts.key !== undefined ? { authorization: `Bearer ${opts.key}` } : {}),
        ...(body !== undefined ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } : {}),
        ...(opts.idempotencyKey !== undefined ? { 'idempotency-key': opts.idempotencyKey } : {}),
      },
      timeout: 15_000,
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString() }));
      res.on('error', (err) => resolve({ error: err.message }));
    });
    req.on('timeout', () => req.destroy(new Error('timed out after 15 s')));
    req.on('error', (err) => resolve({ error: err.message }));
    req.end(body);
  });
}

/** A runbook config with the example addresses and port replaced; each must be there. */
function fromRunbook(file: string, replace: ReadonlyArray<readonly [string | RegExp, string]>): string {
  let text = readFileSync(join(ROOT, 'docs', 'deployment', file), 'utf8');
  for (const [from, to] of replace) {
    const next = text.replace(from, to);
    if (next === text) throw new Error(`docs/deployment/${file} no longer holds ${String(from)}`);
    text = next;
  }
  return text;
}

test('two instances behind nginx and haproxy through a rolling restart and a key change: no error, no 5xx, every create once, limits exact', { skip, timeout: 10 * SLOW_MS }, async (t) => {
  const started = performance.now();
  const [pg, redis] = await Promise.all([startPostgres({ t }), startRedis({ t })]) as [PostgresServer, RedisServer];
  const dir = tempDir();
  const configFile = join(dir, 'petstore.config.json');
  writeFileSync(configFile, JSON.stringify(config({ late: false, trustProxy: true })));
  const args = ['--config', configFile, '--store', pg.url, '--limits', redis.url, '--workers', '2'];
  const [portA, portB] = [await freePort(), await freePort()];
  const a = new Instance('instance a', portA, args, dir);
  const b = new Instance('instance b', portB, args, dir);
  t.after(() => Promise.all([a.close(), b.close()]));
  // Side by side, as the workers of one instance do: the schema is made once.
  await Promise.all([a.start(), b.start()]);
  const upstreams = [['10.0.0.11:8080', `127.0.0.1:${portA}`], ['10.0.0.12:8080', `127.0.0.1:${portB}`]] as const;
  const [nginx, haproxy] = await Promise.all([
    startNginx({ t, site: (port) => fromRunbook('nginx.conf', [...upstreams, [/listen 80;/, `listen 127.0.0.1:${port};`]]) }),
    startHaproxy({ t, site: (port) => fromRunbook('haproxy.cfg', [...upstreams, [/bind :80\n/, `bind 127.0.0.1:${port}\n`]]) }),
  ]) as [ProxyServer, ProxyServer];
  const proxies = [nginx, haproxy];
  // Both proxies see both instances (haproxy's checks have run).
  for (const p of proxies) {
    await until(`${p.url} answers`, async () => {
      const r = await call(p.url, 'GET', '/readyz');
      return 'status' in r && r.status === 200;
    });
  }
  const setupMs = performance.now() - started;

  // -- the clients -------------------------------------------------------------------------
  // Idle connections are closed by the client after 4 s, before the proxy closes them (haproxy's
  // `timeout http-keep-alive 10s`): a request sent on a connection the proxy is closing at that
  // moment fails on the client's side, whatever the instances behind do (the same rule as the
  // runbook's nginx keepalive_timeout below petstore's 5 s).
  const agents = proxies.map(() => new Agent({ keepAlive: true, maxSockets: CREATORS + READERS, timeout: 4_000 }));
  t.after(() => agents.forEach((ag) => ag.destroy()));
  const seen = { requests: 0, creates: 0, replayed: 0, retries: 0, inUse: 0, reads: 0, connectionErrors: 0, serverErrors: 0 };
  const unexpected: string[] = [];
  const acked = new Map<string, number>();
  let stopping = false;

  const creator = async (loop: number): Promise<void> => {
    for (let n = 0; n < MAX_PER_LOOP && !stopping; n++) {
      const name = `roll-${loop}-${n}`;
      const idempotencyKey = randomUUID();
      for (let attempt = 0; ; attempt++) {
        if (attempt === MAX_ATTEMPTS) {
          unexpected.push(`${name}: no 201 in ${MAX_ATTEMPTS} attempts`);
          return;
        }
        if (attempt > 0) seen.retries++;
        const via = (loop + n + attempt) % 2;
        const r = await call(proxies[via]!.url, 'POST', '/v1/pets', { key: KEY.load, body: { name, categoryId: loop + 1, status: 'available' }, idempotencyKey, agent: agents[via]! });
        seen.requests++;
        if ('error' in r) {
          seen.connectionErrors++;
          unexpected.push(`${name} via ${via === 0 ? 'nginx' : 'haproxy'}: ${r.error}`);
        } else if (r.status >= 500) {
          seen.serverErrors++;
          unexpected.push(`${name} via ${via === 0 ? 'nginx' : 'haproxy'}: ${r.status} ${r.text.slice(0, 200)}`);
        } else if (r.status === 409) {
          // The first attempt is still being written somewhere: retry once it is answered.
          seen.inUse++;
        } else if (r.status === 201) {
          const pet = JSON.parse(r.text) as { id: number; name: string };
          if (r.headers['idempotent-replayed'] === 'true') seen.replayed++;
          else seen.creates++;
          assert.equal(pet.name, name);
          acked.set(name, pet.id);
          break;
        } else {
          unexpected.push(`${name}: ${r.status} ${r.text.slice(0, 200)}`);
          return;
        }
        await sleep(20);
      }
    }
  };
  const reader = async (loop: number): Promise<void> => {
    for (let n = 0; n < MAX_PER_LOOP && !stopping; n++) {
      const via = (loop + n) % 2;
      const r = await call(proxies[via]!.url, 'GET', n % 2 === 0 ? '/v1/pets?limit=20' : '/v1/pets?limit=20&status=available', { key: KEY.load, agent: agents[via]! });
      seen.requests++;
      seen.reads++;
      if ('error' in r) {
        seen.connectionErrors++;
        unexpected.push(`read via ${via === 0 ? 'nginx' : 'haproxy'}: ${r.error}`);
      } else if (r.status !== 200) {
        if (r.status >= 500) seen.serverErrors++;
        unexpected.push(`read via ${via === 0 ? 'nginx' : 'haproxy'}: ${r.status} ${r.text.slice(0, 200)}`);
      }
      await sleep(5);
    }
  };
  const clients = Promise.all([...Array.from({ length: CREATORS }, (_, i) => creator(i)), ...Array.from({ length: READERS }, (_, i) => reader(i))]);
  // Each from an address of its own: a refused key is charged to the keyless budget of its
  // address (trusted through the proxies), which would soon answer 429 instead of 401.
  const allowed = async (key: string): Promise<number[]> => {
    const out: number[] = [];
    for (let i = 0; i < 8; i++) {
      const r = await call(proxies[i % 2]!.url, 'GET', '/v1/pets?limit=1', { key, localAddress: `127.0.1.${i + 1}` });
      out.push('status' in r ? r.status : -1);
    }
    return out;
  };
  const flowing = async (what: string): Promise<void> => {
    const at = seen.creates + seen.replayed;
    await until(`creates go on ${what}`, () => seen.creates + seen.replayed >= at + 20 || stopping, SLOW_MS);
  };

  // -- the rolling restart -----------------------------------------------------------------
  const steps: string[] = [];
  const mark = (what: string): void => { steps.push(`${((performance.now() - started) / 1000).toFixed(1)} s ${what}`); };
  try {
    await flowing('before the restarts');
    assert.deepEqual(await allowed(KEY.gone), [200, 200, 200, 200, 200, 200, 200, 200], 'the key to revoke works before the SIGHUP');
    mark('SIGTERM a');
    assert.equal(await a.stop(), 0, `instance a stops cleanly: ${a.stderr()}`);
    await flowing('while a is down');
    mark('a stopped; starting it');
    await a.start();
    mark('a serving again');
    await flowing('after a is back');
    // As the runbook says: before the next instance, both proxies send to this one again (nginx
    // after its fail_timeout of 2 s, haproxy after two good checks a second apart); else nginx,
    // with a still marked failed and b stopping, has no server left and answers 502 itself.
    await sleep(2_500);

    writeFileSync(configFile, JSON.stringify(config({ late: true, trustProxy: true })));
    await Promise.all([a.reload(), b.reload()]);
    mark('SIGHUP: key changed in both');
    assert.deepEqual(await allowed(KEY.late), [200, 200, 200, 200, 200, 200, 200, 200], 'the added key works through both proxies');
    assert.deepEqual(await allowed(KEY.gone), [401, 401, 401, 401, 401, 401, 401, 401], 'the revoked key is refused through both proxies');

    mark('SIGTERM b');
    assert.equal(await b.stop(), 0, `instance b stops cleanly: ${b.stderr()}`);
    await flowing('while b is down');
    mark('b stopped; starting it');
    await b.start();
    mark('b serving again');
    await flowing('after b is back');
    // Both proxies send to b again before the clients stop (nginx retries it after 2 s).
    await sleep(2_500);
  } finally {
    stopping = true;
    await clients;
  }
  mark('clients stopped');
  t.diagnostic(`steps: ${steps.join('; ')}`);
  t.diagnostic(`through the proxies: ${JSON.stringify(seen)}`);
  assert.deepEqual(unexpected, [], `the clients saw no error; nginx said: ${nginx.log().slice(-3000)}\nhaproxy said: ${haproxy.log().slice(-3000)}`);
  assert.equal(seen.connectionErrors, 0, 'no connection error');
  assert.equal(seen.serverErrors, 0, 'no 5xx');

  // -- every acknowledged create is a row, exactly once ---------------------------------------
  const rows = (await pg.psql("SELECT name, id FROM petstore_pets WHERE name LIKE 'roll-%' ORDER BY id")).trim().split('\n').filter(Boolean).map((l) => l.split('|'));
  const byName = new Map<string, number[]>();
  for (const [name, id] of rows) byName.set(name!, [...(byName.get(name!) ?? []), Number(id)]);
  const lost = [...acked].filter(([name]) => !byName.has(name));
  const doubled = [...byName].filter(([, ids]) => ids.length > 1);
  const moved = [...acked].filter(([name, id]) => byName.get(name)?.[0] !== id && byName.has(name));
  const unacked = [...byName.keys()].filter((name) => !acked.has(name));
  t.diagnostic(`${acked.size} acknowledged creates, ${rows.length} rows`);
  assert.deepEqual({ lost, doubled, moved, unacked }, { lost: [], doubled: [], moved: [], unacked: [] });
  assert.ok(acked.size >= 100, `enough creates to mean something: ${acked.size}`);

  // -- limits exact across all four processes ----------------------------------------------
  // One minute's budget of the burst key, then twice as many again, all at once: exactly BURST
  // get through (the bucket gains a token every 60 / BURST s, far longer than the burst takes).
  const burstStarted = performance.now();
  const burst = (await Promise.all(Array.from({ length: 3 * BURST }, (_, i) => call(proxies[i % 2]!.url, 'GET', '/v1/pets?limit=1', { key: KEY.burst }))))
    .map((r) => ('status' in r ? r.status : -1));
  const burstMs = performance.now() - burstStarted;
  assert.ok(burstMs < 60_000 / BURST, `the burst took ${burstMs.toFixed(0)} ms, less than a token's refill`);
  const count = (s: number): number => burst.filter((x) => x === s).length;
  t.diagnostic(`burst of ${burst.length} in ${burstMs.toFixed(0)} ms: ${count(200)} x 200, ${count(429)} x 429; worker pids that answered it: ${a.burstPids.size} of a, ${b.burstPids.size} of b`);
  assert.deepEqual({ ok: count(200), limited: count(429), other: burst.length - count(200) - count(429) }, { ok: BURST, limited: 2 * BURST, other: 0 });
  assert.equal(a.burstPids.size + b.burstPids.size, 4, 'the burst reached all four processes');

  // -- the keyless budget: the client's address, only while the proxy is trusted ----------------
  const keyless = async (from: string, via: ProxyServer, n: number): Promise<number[]> => {
    const out: number[] = [];
    for (let i = 0; i < n; i++) {
      const r = await call(via.url, 'GET', '/v1/pets', { localAddress: from });
      out.push('status' in r ? r.status : -1);
    }
    return out;
  };
  const spent = Array.from({ length: ANONYMOUS }, () => 401);
  assert.deepEqual(await keyless('127.0.0.2', nginx, ANONYMOUS + 1), [...spent, 429], 'one client address spends its own budget');
  assert.deepEqual(await keyless('127.0.0.2', haproxy, 1), [429], 'the same budget through the other proxy');
  assert.deepEqual(await keyless('127.0.0.3', haproxy, 1), [401], 'another client address has a budget of its own');
  writeFileSync(configFile, JSON.stringify(config({ late: true, trustProxy: false })));
  await Promise.all([a.reload(), b.reload()]);
  assert.deepEqual(await keyless('127.0.0.4', nginx, ANONYMOUS), spent);
  assert.deepEqual(await keyless('127.0.0.5', haproxy, 1), [429], 'without trustProxy every client behind the proxies shares one budget');

  t.diagnostic(`set-up ${(setupMs / 1000).toFixed(1)} s, whole test ${((performance.now() - started) / 1000).toFixed(1)} s`);
});
