// GET /readyz from the outside: 200 without a key, a limit or rate-limit headers while the
// process can serve; 503 with an Error body once SIGTERM has started the stop, on a connection
// that was open before it (new connections are no longer accepted), while /healthz is
// liveness. (Red while PostgreSQL is away: postgres-recovery.test.ts.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { sleep, startBundle, until } from '../support/bundle.js';

test('/readyz: 200 while ready, no key, no limit; 503 with an Error body during the stop after SIGTERM', async (t) => {
  const srv = await startBundle(['--memory']);
  t.after(() => srv.stop('SIGKILL'));
  const base = srv.url.slice(0, -3);
  for (let i = 0; i < 3; i++) {
    const res = await fetch(`${base}/readyz`);
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { status: 'ready' });
    assert.equal(res.headers.get('ratelimit-limit') ?? res.headers.get('x-ratelimit-limit'), null, 'charged to nothing');
  }
  const u = new URL(srv.url);
  const sock = connect(Number(u.port), u.hostname);
  await new Promise((r) => sock.once('connect', r));
  let got = '';
  sock.setEncoding('utf8');
  sock.on('data', (d: string) => { got += d; });
  const closed = new Promise<void>((r) => sock.once('close', () => r()));
  // The request begun before the signal, ended after it.
  sock.write('GET /readyz HTTP/1.1\r\nHost: x\r\n');
  await sleep(100);
  srv.proc.kill('SIGTERM');
  await until('the stop has begun', () => /SIGTERM received/.test(srv.stderr()));
  sock.write('\r\n');
  await closed;
  assert.match(got, /^HTTP\/1\.1 503 /);
  assert.match(got, /\r\nconnection: close\r\n/i);
  const body = JSON.parse(got.slice(got.indexOf('\r\n\r\n') + 4)) as { code: string; message: string; status: number };
  assert.deepEqual(body, { code: 'service_unavailable', message: 'This instance is stopping: requests in flight finish, new ones should go elsewhere.', status: 503 });
  assert.equal(await srv.exited, 0);
});
