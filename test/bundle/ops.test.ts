// Operating the service: the JSON access log, SIGHUP reload, CORS, a deterministic clock for
// embedders, and the systemd unit of docs/operating.md. Black-box, against the built bundle.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request, type IncomingHttpHeaders } from 'node:http';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { BUNDLE, KEYS, ROOT, call, post, startBundle, tempDir, testConfig, writeConfig, type Running } from '../support/bundle.js';
import { until } from '../support/wait.js';

type PetstoreModule = typeof import('../../src/petstore.js');

interface RawResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
  /** True when the request went out on a kept-alive socket. */
  reused: boolean;
}

/** node:http, so that any header (Origin included) is sent as given, and sockets can be watched. */
function raw(url: string, opts: { method?: string; headers?: Record<string, string>; agent?: Agent; body?: string } = {}): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: opts.method ?? 'GET', headers: opts.headers, agent: opts.agent }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => { body += d; });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body, reused: req.reusedSocket }));
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}

function count(text: string, re: RegExp): number {
  return text.match(new RegExp(re.source, 'g'))?.length ?? 0;
}

describe('access log', () => {
  /** JSON lines after the ready line. */
  function logLines(srv: Running): Array<Record<string, unknown>> {
    const [ready, ...rest] = srv.stdout().split('\n').filter((l) => l !== '');
    assert.match(ready ?? '', /^petstore listening on /, 'the ready line comes first');
    return rest.map((l) => {
      try {
        return JSON.parse(l) as Record<string, unknown>;
      } catch {
        return assert.fail(`a stdout line that is not JSON: ${l}`);
      }
    });
  }

  test('one JSON line per request, in pino field names, with the request id and the key name, never the key', async () => {
    const dir = tempDir();
    const srv = await startBundle(['--memory', '--config', writeConfig(dir), '--log-level', 'info'], { cwd: dir });
    try {
      const mine = await call(`${srv.url}/pets?limit=3`, { key: KEYS.free, headers: { 'x-request-id': 'trace-abc.123', 'user-agent': 'petstore-test/1.0' } });
      assert.equal(mine.headers.get('x-request-id'), 'trace-abc.123', 'a sane client id is echoed');
      const created = await post(`${srv.url}/pets`, KEYS.pro, { name: 'Logged', categoryId: 1 });
      assert.equal(created.status, 201);
      const generated = created.headers.get('x-request-id') ?? '';
      assert.match(generated, /^[0-9a-f]{8}-[0-9a-z]+$/, 'an instance prefix and a counter when the client sent none');
      const wrongKey = 'wrong-secret-key-987';
      const denied = await call(`${srv.url}/pets`, { key: wrongKey, headers: { 'x-request-id': 'has spaces, so replaced' } });
      assert.equal(denied.status, 401);
      assert.notEqual(denied.headers.get('x-request-id'), 'has spaces, so replaced');

      await until('three access lines', () => logLines(srv).filter((l) => l.msg === 'request completed').length >= 3);
      const lines = logLines(srv);
      for (const l of lines) {
        assert.equal(typeof l.level, 'number');
        assert.equal(typeof l.time, 'number');
        assert.ok(Math.abs((l.time as number) - Date.now()) < 60_000, 'time is epoch milliseconds');
        assert.equal(l.pid, srv.proc.pid);
        assert.equal(l.hostname, hostname());
        assert.equal(typeof l.msg, 'string');
      }
      const access = lines.filter((l) => l.msg === 'request completed');
      const byId = (id: string | null): Record<string, unknown> | undefined => access.find((l) => l.reqId === id);

      const first = byId('trace-abc.123');
      assert.ok(first, 'the client request id is in the log line');
      assert.equal(first.level, 30);
      const req = first.req as Record<string, unknown>;
      assert.deepEqual({ method: req.method, url: req.url }, { method: 'GET', url: '/v1/pets?limit=3' });
      // pino-http's names: the client address and port, and the user agent as its header.
      assert.match(String(req.remoteAddress), /^(::ffff:)?127\.0\.0\.1$/);
      assert.equal(typeof req.remotePort, 'number');
      assert.deepEqual(req.headers, { 'user-agent': 'petstore-test/1.0' }, 'the user agent, and no other header');
      assert.deepEqual(first.res, { statusCode: 200 });
      assert.equal(Object.hasOwn(first, 'err'), false, 'no err on a success');
      assert.equal(typeof first.responseTime, 'number');
      assert.equal(first.key, 'free-test', 'the key NAME');

      assert.deepEqual(byId(generated)?.res, { statusCode: 201 });
      assert.equal(byId(generated)?.key, 'pro-test');
      const deniedLine = byId(denied.headers.get('x-request-id'));
      assert.deepEqual(deniedLine?.res, { statusCode: 401 });
      assert.equal(Object.hasOwn(deniedLine ?? {}, 'key'), false, 'no key field when no key was accepted');
      assert.deepEqual(deniedLine?.err, { type: 'ApiError', code: 'unauthorized', message: 'The API key is not valid.' }, 'a 4xx line says why');
      const bad = await call(`${srv.url}/pets?limit=0`, { key: KEYS.free, headers: { 'x-request-id': 'bad-limit' } });
      assert.equal(bad.status, 400);
      await until('the 400 line', () => logLines(srv).some((l) => l.reqId === 'bad-limit'));
      const badLine = logLines(srv).find((l) => l.reqId === 'bad-limit') as { err: { code: string; message: string } };
      assert.equal(badLine.err.code, 'invalid_request');
      assert.match(badLine.err.message, /limit/);

      const out = srv.stdout() + srv.stderr();
      for (const secret of [KEYS.free, KEYS.pro, wrongKey]) assert.ok(!out.includes(secret), 'no key ever appears in the output');
    } finally {
      await srv.stop();
    }
  });

  test('with trustProxy the access line shows the forwarded client address', async () => {
    const dir = tempDir();
    const srv = await startBundle(['--memory', '--config', writeConfig(dir, testConfig({ trustProxy: true })), '--log-level', 'info'], { cwd: dir });
    try {
      await call(`${srv.url}/pets`, { key: KEYS.free, headers: { 'x-request-id': 'proxied', 'x-forwarded-for': '198.51.100.7, 203.0.113.9' } });
      await call(`${srv.url}/pets`, { key: KEYS.free, headers: { 'x-request-id': 'not-an-ip', 'x-forwarded-for': 'evil.example' } });
      await until('two lines', () => logLines(srv).filter((l) => l.msg === 'request completed').length >= 2);
      const address = (id: string): unknown => (logLines(srv).find((l) => l.reqId === id)?.req as Record<string, unknown>).remoteAddress;
      assert.equal(address('proxied'), '203.0.113.9', 'the hop our proxy appended');
      assert.match(String(address('not-an-ip')), /127\.0\.0\.1$/, 'not an address: the socket\'s peer');
    } finally {
      await srv.stop();
    }
  });

  for (const level of ['warn', 'silent']) {
    test(`--log-level ${level} silences the access lines`, async () => {
      const dir = tempDir();
      const srv = await startBundle(['--memory', '--config', writeConfig(dir), '--log-level', level], { cwd: dir });
      try {
        assert.equal((await call(`${srv.url}/pets`, { key: KEYS.free })).status, 200);
        assert.equal((await call(`${srv.url}/pets`)).status, 401);
        await new Promise((r) => setTimeout(r, 100));
        assert.deepEqual(srv.stdout().split('\n').filter((l) => l !== '').length, 1, `only the ready line: ${srv.stdout()}`);
      } finally {
        await srv.stop();
      }
    });
  }

  test('the config logLevel applies when no flag is given; the flag wins', async () => {
    const dir = tempDir();
    const file = writeConfig(dir, testConfig({ logLevel: 'error' }));
    // startBundle always passes a --log-level, so start this one by hand.
    const proc = spawn(process.execPath, [BUNDLE, '--memory', '--port', '0', '--config', file], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    proc.stdout.on('data', (d: Buffer) => { out += d.toString(); });
    const exited = new Promise((r) => proc.on('exit', r));
    try {
      await until('the ready line', () => /listening on (\S+)\n/.test(out));
      const url = /listening on (\S+)\n/.exec(out)?.[1] ?? '';
      assert.equal((await call(`${url}/pets`, { key: KEYS.free })).status, 200);
      await new Promise((r) => setTimeout(r, 100));
      assert.equal(out.split('\n').filter((l) => l !== '').length, 1, `logLevel "error" in the config: no access line: ${out}`);
    } finally {
      proc.kill('SIGTERM');
      await exited;
    }
    const loud = await startBundle(['--memory', '--config', file, '--log-level', 'debug'], { cwd: dir });
    try {
      await call(`${loud.url}/pets`, { key: KEYS.free });
      await until('an access line', () => loud.stdout().includes('"request completed"'));
    } finally {
      await loud.stop();
    }
  });
});

describe('SIGHUP reload', () => {
  const KEEP = 'keep-key-0001';
  const REVOKE = 'revoke-key-0001';
  const UPGRADE = 'upgrade-key-0001';
  const ADDED = 'added-key-0001';
  const base = {
    plans: { free: { perMinute: 60, perDay: 1000 }, pro: { perMinute: 300, perDay: 10000 }, business: { perMinute: 1000, perDay: 100000 } },
    anonymous: { perMinute: 1000, perDay: 100000 },
  };

  test('new, revoked and re-planned keys take effect; connections and limiter state survive; a bad file is refused', async () => {
    const dir = tempDir();
    const file = writeConfig(dir, {
      ...base,
      keys: [
        { key: KEEP, plan: 'free', name: 'keep' },
        { key: REVOKE, plan: 'free', name: 'revoke' },
        { key: UPGRADE, plan: 'pro', name: 'upgrade' },
      ],
    });
    const srv = await startBundle(['--memory', '--config', file], { cwd: dir });
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const get = (key: string, path = '/pets'): Promise<RawResponse> => raw(`${srv.url}${path}`, { agent, headers: { authorization: `Bearer ${key}` } });
    const reloads = (): number => count(srv.stderr(), /config reloaded/);
    const refusals = (): number => count(srv.stderr(), /config reload refused/);
    try {
      // Before: five requests on one kept-alive connection.
      const first = await get(KEEP);
      assert.equal(first.status, 200);
      assert.equal(first.reused, false);
      for (let i = 0; i < 4; i++) assert.equal((await get(KEEP)).reused, true, 'the agent keeps the connection');
      assert.equal((await get(REVOKE)).status, 200);
      const before = await get(UPGRADE);
      assert.equal(before.headers['x-ratelimit-limit'], '300');
      assert.equal((await get(ADDED)).status, 401, 'not a key yet');

      writeFileSync(file, JSON.stringify({
        ...base,
        dataFile: 'elsewhere/pets.json',
        keys: [
          { key: KEEP, plan: 'free', name: 'keep' },
          { key: UPGRADE, plan: 'business', name: 'upgrade' },
          { key: ADDED, plan: 'pro', name: 'added' },
        ],
      }));
      srv.proc.kill('SIGHUP');
      await until('the reload message', () => reloads() === 1);
      assert.ok(srv.stderr().includes(file), 'the message names the file');
      await until('the restart-only warning', () => srv.stdout().includes('take effect only after a restart'));
      const warning = JSON.parse(srv.stdout().split('\n').find((l) => l.includes('only after a restart')) ?? '{}') as { level: number; fields: string[] };
      assert.deepEqual({ level: warning.level, fields: warning.fields }, { level: 40, fields: ['dataFile'] }, 'a change a reload cannot apply is named');

      const kept = await get(KEEP);
      assert.equal(kept.status, 200);
      assert.equal(kept.reused, true, 'the connection opened before the reload still serves');
      assert.equal(kept.headers['x-ratelimit-remaining'], '54', 'the limiter state of a kept key is not reset (60 - 6)');
      assert.equal((await get(ADDED)).status, 200, 'a new key works');
      const revoked = await get(REVOKE);
      assert.equal(revoked.status, 401, 'a revoked key is refused');
      assert.match(String(revoked.headers['www-authenticate']), /invalid_token/);
      const upgraded = await get(UPGRADE);
      assert.equal(upgraded.status, 200);
      assert.equal(upgraded.headers['x-ratelimit-limit'], '1000', 'the new plan applies');
      assert.match(String(upgraded.headers['ratelimit-policy']), /"minute";q=1000;w=60, "day";q=100000;w=86400/);

      // A file that is not JSON: refused, named, and the config in force stays.
      writeFileSync(file, '{ "keys": [ oops');
      srv.proc.kill('SIGHUP');
      await until('the refusal message', () => refusals() === 1);
      const refusal = srv.stderr().split('\n').find((l) => l.includes('config reload refused')) ?? '';
      assert.ok(refusal.includes(file), `names the file: ${refusal}`);
      assert.match(srv.stderr(), /not valid JSON/);
      // And a JSON log line at level 50 on stdout, for a pipeline alerting on errors.
      await until('the refusal as a JSON line', () => srv.stdout().includes('"msg":"config reload refused'));
      const line = srv.stdout().split('\n').find((l) => l.includes('"msg":"config reload refused')) ?? '';
      const logged = JSON.parse(line) as { level: number; config: string; reason: string; signal: string };
      assert.equal(logged.level, 50);
      assert.equal(logged.config, file);
      assert.equal(logged.signal, 'SIGHUP');
      assert.match(logged.reason, /not valid JSON/);
      assert.equal((await get(ADDED)).status, 200, 'the old config stays in force');
      assert.equal((await get(KEEP)).headers['x-ratelimit-remaining'], '53');
      assert.equal((await get(REVOKE)).status, 401);

      // Valid JSON with a bad plan: refused with the problem listed.
      writeFileSync(file, JSON.stringify({ ...base, keys: [{ key: KEEP, plan: 'platinum' }] }));
      srv.proc.kill('SIGHUP');
      await until('the second refusal', () => refusals() === 2);
      assert.match(srv.stderr(), /platinum/);
      assert.equal((await get(UPGRADE)).headers['x-ratelimit-limit'], '1000');
      assert.equal((await get(ADDED)).status, 200);

      assert.equal(srv.proc.exitCode, null, 'still running');
      assert.equal(reloads(), 1);
      assert.ok(!srv.stderr().includes(KEEP), 'no key in the messages');
      assert.ok(!srv.stdout().includes(KEEP), 'no key in the log');
    } finally {
      agent.destroy();
      assert.equal(await srv.stop(), 0);
    }

  });

  test('a SIGHUP without a config file and a SIGTERM are JSON log lines too (warn, info), beside their stderr lines', async () => {
    const srv = await startBundle(['--memory', '--log-level', 'info']);
    try {
      srv.proc.kill('SIGHUP');
      await until('the ignored SIGHUP', () => /SIGHUP ignored/.test(srv.stderr()) && /"msg":"SIGHUP ignored/.test(srv.stdout()));
    } finally {
      assert.equal(await srv.stop(), 0);
    }
    const events = srv.stdout().split('\n').filter((l) => /"msg":"(SIGHUP ignored|SIGTERM received)/.test(l)).map((l) => JSON.parse(l) as { level: number; signal: string });
    assert.deepEqual(events.map((e) => [e.level, e.signal]), [[40, 'SIGHUP'], [30, 'SIGTERM']]);
    assert.match(srv.stderr(), /petstore: SIGTERM received, finishing in-flight requests/);
  });

  test('a reload moves the links when --env is given', async () => {
    const dir = tempDir();
    const file = writeConfig(dir, testConfig({ environments: { production: 'https://one.example/v1', staging: 'https://s.example/v1' } }));
    const srv = await startBundle(['--memory', '--config', file, '--env', 'production'], { cwd: dir });
    try {
      const res = await post(`${srv.url}/pets`, KEYS.free, { name: 'a', categoryId: 1 });
      assert.equal(res.headers.get('location'), 'https://one.example/v1/pets/1');
      writeFileSync(file, JSON.stringify(testConfig({ environments: { production: 'https://two.example/v1', staging: 'https://s.example/v1' } })));
      srv.proc.kill('SIGHUP');
      await until('the reload', () => srv.stderr().includes('config reloaded'));
      const again = await post(`${srv.url}/pets`, KEYS.free, { name: 'b', categoryId: 1 });
      assert.equal(again.headers.get('location'), 'https://two.example/v1/pets/2');
      const doc = (await call(`${srv.url}/openapi.json`)).json as { servers: Array<{ url: string }> };
      assert.equal(doc.servers[0]?.url, 'https://two.example/v1', 'the OpenAPI document follows the reload');
    } finally {
      await srv.stop();
    }
  });
});

describe('CORS', () => {
  const APP = 'https://app.example.com';

  async function withServer(cors: unknown, fn: (url: string) => Promise<void>): Promise<void> {
    const dir = tempDir();
    const srv = await startBundle(['--memory', '--config', writeConfig(dir, testConfig(cors === undefined ? {} : { cors }))], { cwd: dir });
    try {
      await fn(srv.url);
    } finally {
      await srv.stop();
    }
  }

  function corsHeaders(h: IncomingHttpHeaders): string[] {
    return Object.keys(h).filter((k) => k.startsWith('access-control-'));
  }

  const preflight = (url: string, origin: string): Promise<RawResponse> => raw(`${url}/pets`, {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' },
  });

  test('off by default: no Access-Control-* header, and a preflight needs a key like anything else', async () => {
    await withServer(undefined, async (url) => {
      const res = await raw(`${url}/pets`, { headers: { origin: APP, authorization: `Bearer ${KEYS.free}` } });
      assert.equal(res.status, 200);
      assert.deepEqual(corsHeaders(res.headers), []);
      const pre = await preflight(url, APP);
      assert.equal(pre.status, 401);
      assert.deepEqual(corsHeaders(pre.headers), []);
    });
  });

  test('a listed origin: allowed, the rate-limit headers exposed, errors readable too', async () => {
    await withServer({ origins: [APP, 'http://localhost:3000'] }, async (url) => {
      const ok = await raw(`${url}/pets`, { headers: { origin: APP, authorization: `Bearer ${KEYS.free}` } });
      assert.equal(ok.status, 200);
      assert.equal(ok.headers['access-control-allow-origin'], APP);
      assert.match(String(ok.headers.vary), /Origin/);
      const exposed = String(ok.headers['access-control-expose-headers']).split(/,\s*/).map((h) => h.toLowerCase());
      for (const h of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'ratelimit-policy', 'ratelimit', 'retry-after', 'link', 'location', 'x-request-id', 'deprecation', 'sunset', 'idempotent-replayed']) {
        assert.ok(exposed.includes(h), `${h} is exposed`);
      }
      assert.equal(ok.headers['access-control-allow-credentials'], undefined, 'bearer keys, not cookies');
      const denied = await raw(`${url}/pets`, { headers: { origin: 'http://localhost:3000' } });
      assert.equal(denied.status, 401);
      assert.equal(denied.headers['access-control-allow-origin'], 'http://localhost:3000', 'a browser client can read the 401');
    });
  });

  test('a preflight from a listed origin: 204 without a key, methods, headers, max-age', async () => {
    await withServer({ origins: [APP] }, async (url) => {
      const pre = await preflight(url, APP);
      assert.equal(pre.status, 204, pre.body);
      assert.equal(pre.body, '');
      assert.equal(pre.headers['access-control-allow-origin'], APP);
      const methods = String(pre.headers['access-control-allow-methods']).split(/,\s*/);
      for (const m of ['GET', 'POST']) assert.ok(methods.includes(m), `${m} allowed on /pets`);
      const allowed = String(pre.headers['access-control-allow-headers']).toLowerCase();
      for (const h of ['authorization', 'content-type']) assert.ok(allowed.includes(h), `${h} allowed`);
      assert.match(String(pre.headers['access-control-max-age']), /^[1-9][0-9]*$/);
      assert.equal(pre.headers['www-authenticate'], undefined, 'not a 401');
      const onePet = await raw(`${url}/pets/1`, { method: 'OPTIONS', headers: { origin: APP, 'access-control-request-method': 'GET' } });
      assert.equal(onePet.status, 204);
      assert.ok(String(onePet.headers['access-control-allow-methods']).includes('GET'));
    });
  });

  test('an origin not listed gets no CORS header, on requests and preflights', async () => {
    await withServer({ origins: [APP] }, async (url) => {
      for (const origin of ['https://evil.example.com', 'https://app.example.com.evil.example', 'http://app.example.com', 'null']) {
        const res = await raw(`${url}/pets`, { headers: { origin, authorization: `Bearer ${KEYS.free}` } });
        assert.equal(res.status, 200);
        assert.deepEqual(corsHeaders(res.headers), [], origin);
        const pre = await preflight(url, origin);
        assert.equal(pre.status, 401, 'not answered as a preflight');
        assert.deepEqual(corsHeaders(pre.headers), [], origin);
      }
    });
  });

  test('"*" allows any origin', async () => {
    await withServer({ origins: ['*'] }, async (url) => {
      const res = await raw(`${url}/pets`, { headers: { origin: 'https://anyone.example', authorization: `Bearer ${KEYS.free}` } });
      assert.equal(res.headers['access-control-allow-origin'], '*');
      assert.equal((await preflight(url, 'https://anyone.example')).status, 204);
    });
  });

  test('a bad cors config is refused at start', async () => {
    const dir = tempDir();
    await assert.rejects(startBundle(['--memory', '--config', writeConfig(dir, testConfig({ cors: { origins: ['https://app.example.com/path'] } }))], { cwd: dir }), /cors\.origins\[0\]/);
  });
});

describe('embedding with a manual clock', () => {
  test('limits are deterministic: 60 free requests, 429, one more after 1 s', async () => {
    const { startPetstore, ManualClock } = (await import(pathToFileURL(BUNDLE).href)) as PetstoreModule;
    const clock = new ManualClock();
    const start = clock.now() / 1000;
    const store = await startPetstore({ port: 0, clock, config: { keys: [{ key: 'clock-key', plan: 'free', name: 'clock' }] } });
    const get = (): Promise<Response> => fetch(`${store.url}/pets`, { headers: { authorization: 'Bearer clock-key' } });
    try {
      for (let i = 1; i <= 60; i++) {
        const res = await get();
        assert.equal(res.status, 200);
        assert.equal(res.headers.get('x-ratelimit-remaining'), String(60 - i));
        await res.arrayBuffer();
      }
      const limited = await get();
      assert.equal(limited.status, 429);
      assert.equal(((await limited.json()) as { code: string }).code, 'rate_limited');
      assert.equal(limited.headers.get('retry-after'), '1', 'one token per second on the free plan');
      assert.equal(limited.headers.get('x-ratelimit-remaining'), '0');
      assert.equal(limited.headers.get('x-ratelimit-reset'), String(start + 60), 'full again 60 s after the burst, to the second');

      clock.advance(999);
      assert.equal((await get()).status, 429, 'not before a whole token');
      clock.advance(1);
      const admitted = await get();
      assert.equal(admitted.status, 200, 'one more after 1 s');
      assert.equal(admitted.headers.get('x-ratelimit-remaining'), '0');
      assert.equal((await get()).status, 429, 'and only one');

      clock.advance(60_000);
      const full = await get();
      assert.equal(full.headers.get('x-ratelimit-remaining'), '59', 'a minute later the bucket is full again');
    } finally {
      await store.close();
    }
  });
});

describe('the systemd unit in docs/operating.md', () => {
  const readme = readFileSync(join(ROOT, 'docs', 'operating.md'), 'utf8');
  const unit = /```ini\n(# \/etc\/systemd\/system\/petstore\.service\n[\s\S]*?)```/.exec(readme)?.[1];

  test('it is there, with the settings an operator relies on', () => {
    assert.ok(unit, 'docs/operating.md has an ini block starting "# /etc/systemd/system/petstore.service"');
    for (const line of [
      'Restart=on-failure', 'ExecReload=/bin/kill -HUP $MAINPID', 'StateDirectory=petstore', 'DynamicUser=yes',
      'NoNewPrivileges=yes', 'ProtectSystem=strict', 'ProtectHome=yes', 'PrivateTmp=yes', 'WantedBy=multi-user.target',
    ]) {
      assert.ok(unit.split('\n').includes(line), `the unit has ${line}`);
    }
    const execStart = /^ExecStart=(.*)$/m.exec(unit)?.[1] ?? '';
    assert.match(execStart, / --data \/var\/lib\/petstore\/pets\.json( |$)/);
    const timeout = Number(/^TimeoutStopSec=(\d+)$/m.exec(unit)?.[1]);
    assert.ok(timeout > 10, 'systemd waits longer than the 10 s shutdown grace');
  });

  test('its ExecStart flags are ones the command line knows', () => {
    const execStart = /^ExecStart=(.*)$/m.exec(unit ?? '')?.[1] ?? '';
    const help = spawnSync(process.execPath, [BUNDLE, '--help'], { encoding: 'utf8' }).stdout;
    const flags = execStart.match(/--[a-z-]+/g) ?? [];
    assert.ok(flags.length >= 2);
    for (const flag of flags) assert.ok(help.includes(`  ${flag}`), `${flag} is in --help`);
  });

  test('systemd-analyze verify accepts it without a warning', (t) => {
    const probe = spawnSync('systemd-analyze', ['--version'], { encoding: 'utf8' });
    if (probe.error || probe.status !== 0) {
      t.skip('systemd-analyze is not installed here');
      return;
    }
    assert.ok(unit);
    const dir = mkdtempSync(join(tmpdir(), 'petstore-unit-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    // verify checks that the ExecStart binary exists: point it at this node when /usr/bin/node is absent.
    const node = spawnSync('test', ['-x', '/usr/bin/node']).status === 0 ? '/usr/bin/node' : process.execPath;
    const file = join(dir, 'petstore.service');
    writeFileSync(file, unit.replace(/^ExecStart=\/usr\/bin\/node /m, `ExecStart=${node} `));
    const r = spawnSync('systemd-analyze', ['verify', file], { encoding: 'utf8', cwd: dir });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stderr.trim(), '', 'no warning');
  });
});
