// A StoreInputError (the store refusing input it cannot honour) is answered 400
// invalid_request, as src/store/errors.ts documents, never 500: input the store cannot honour
// is the client's problem, answered as such, and nothing is stored.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp } from '../../src/http/app.js';
import { ManualClock } from '../../src/core/clock.js';
import { parseConfig } from '../../src/config/index.js';
import { silentLogger } from '../../src/core/log.js';
import type { RouteSpec } from '../../src/api/index.js';
import { openMemoryStore, StoreInputError } from '../../src/store/index.js';
import { MemoryLimiter } from '../../src/limits/index.js';

function route(path: string, handler: RouteSpec['handler']): RouteSpec {
  return { operationId: path.slice(1), method: 'POST', path, summary: '', tags: [], auth: 'key', parameters: [], responses: {}, handler };
}

test('a StoreInputError thrown or rejected by a handler is a 400 Error body that names the problem', async (t) => {
  const clock = new ManualClock();
  const config = parseConfig({ keys: [{ key: 'k', plan: 'free' }] }, 'test', '/srv');
  const store = openMemoryStore();
  const message = 'seed pet #0 has id 0, which is not a positive safe integer';
  const app = createApp({
    store,
    clock,
    logger: silentLogger,
    keyLimiter: new MemoryLimiter({ clock, ban: config.ban }),
    addressLimiter: new MemoryLimiter({ clock, ban: config.ban }),
    config: () => config,
    publicBase: undefined,
    routes: [
      route('/thrown', () => { throw new StoreInputError(message); }),
      // A real rejection from the store, as a handler that seeds would see it.
      route('/rejected', async () => {
        await store.seed([{ id: 0, name: 'x', categoryId: 1 }]);
        return { status: 201, body: '{}' };
      }),
    ],
  });
  const server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(async () => {
    server.close();
    await store.close();
  });
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  for (const path of ['/thrown', '/rejected']) {
    const res = await fetch(base + path, { method: 'POST', headers: { authorization: 'Bearer k' } });
    const body = (await res.json()) as { code: string; message: string; status: number };
    assert.equal(res.status, 400, `${path}: ${JSON.stringify(body)}`);
    assert.deepEqual(body, { code: 'invalid_request', message, status: 400 });
  }
});
