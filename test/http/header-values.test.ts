// A header value node refuses (writeHead throws ERR_INVALID_CHAR outside Latin-1) must not
// reach a response: the config refuses such base URLs, and if one got through anyway the
// one exit ends that connection and logs instead of throwing out of the request.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp } from '../../src/http/app.js';
import { systemClock } from '../../src/core/clock.js';
import { parseConfig } from '../../src/config/index.js';
import { ROUTES } from '../../src/api/routes.js';
import { openMemoryStore } from '../../src/store/index.js';
import { KEYS, call, runBundle, tempDir, testConfig, writeConfig } from '../support/bundle.js';
import { MemoryLimiter } from '../../src/limits/index.js';

const NON_LATIN1 = 'https://api.ex\u20acmple.com/v1';

test('an environment URL outside ASCII is refused at start, named, with exit 1', async () => {
  const dir = tempDir();
  const file = writeConfig(dir, testConfig({ environments: { production: NON_LATIN1, staging: 'https://staging.example.com/v1' } }));
  const r = await runBundle(['--config', file, '--memory', '--port', '0', '--env', 'production'], { cwd: dir });
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stderr, /environments\.production must be an http\(s\) URL ending in \/v1, absolute and in ASCII/);
  assert.equal(r.stdout, '');
});

test('a response node refuses to write ends its connection and is logged; the process and other requests go on', { timeout: 20_000 }, async (t) => {
  const config = parseConfig(testConfig(), 'test', process.cwd());
  const logged: Array<{ level: string; msg: string }> = [];
  const app = createApp({
    store: openMemoryStore(),
    clock: systemClock,
    logger: { log: (level, msg) => logged.push({ level, msg }) },
    keyLimiter: new MemoryLimiter({ clock: systemClock, ban: config.ban }),
    addressLimiter: new MemoryLimiter({ clock: systemClock, ban: config.ban }),
    config: () => config,
    publicBase: NON_LATIN1, // what the config now refuses, given to the app directly
    routes: ROUTES,
  });
  const server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  const key = KEYS.free;

  // GET /pets/{id} carries Link: <{base}/pets> (keyless: in its 401); POST /pets a Location.
  await assert.rejects(call(`${base}/pets/1`, { key }));
  await assert.rejects(call(`${base}/pets/1`));
  await assert.rejects(call(`${base}/pets`, { method: 'POST', key, headers: { 'content-type': 'application/json' }, body: '{"name":"a","categoryId":1}' }));
  assert.ok(logged.filter((l) => l.level === 'error' && /could not be written/.test(l.msg)).length >= 3, JSON.stringify(logged));
  // Whatever does not carry the URL is answered as usual.
  assert.equal((await call(`${base}/pets`, { key })).status, 200);
});
