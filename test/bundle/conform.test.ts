// HTTP conformance at the edges, against the built bundle over raw sockets: request-target
// forms, versions, transfer codings, Expect: 100-continue, the auth challenge, /healthz
// methods, and the name rules as a client sees them.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { KEYS, call, post, startBundle, tempDir, writeConfig, type Running } from '../support/bundle.js';
import { ResponseParser, errorBodyProblem, errorCode, exchange, header, portOf, type RawResponse } from '../support/wire.js';

let srv: Running;
let port: number;
let host: string;
const key = KEYS.enterprise;

before(async () => {
  const dir = tempDir();
  srv = await startBundle(['--memory', '--config', writeConfig(dir)], { cwd: dir });
  port = portOf(srv.url);
  host = `127.0.0.1:${port}`;
  for (let i = 1; i <= 3; i++) assert.equal((await post(`${srv.url}/pets`, key, { name: `pet${i}`, categoryId: i })).status, 201);
});
after(() => srv.stop());

/** The pets in the store, as text (to show a refused request changed nothing). */
async function pets(): Promise<string> {
  return (await call(`${srv.url}/pets?limit=100`, { key })).text;
}

/** Sends raw bytes on a fresh connection; every response until the server closes. */
async function raw(text: string): Promise<RawResponse[]> {
  const res = await exchange(port, Buffer.from(text, 'latin1'), { quietMs: 300, timeoutMs: 10_000 });
  assert.equal(res.parseError, undefined);
  return res.responses;
}

function assertErrorResponse(r: RawResponse | undefined, status: number, code: string): RawResponse {
  assert.ok(r, 'a response');
  assert.equal(r.status, status, r.body.toString());
  assert.equal(errorBodyProblem(r), undefined);
  assert.equal(errorCode(r), code);
  return r;
}

describe('absolute-form request targets (RFC 9112 section 3.2.2)', () => {
  const cases: Array<{ target: string; status: number; body?: RegExp }> = [
    { target: `http://${'HOST'}/v1/pets?limit=2`, status: 200, body: /^\[\{"id":1,.*\{"id":2,[^\]]*\]$/ },
    { target: `HTTP://${'HOST'}/v1/pets/3`, status: 200, body: /"id":3/ },
    { target: `http://${'HOST'}/healthz`, status: 200, body: /"ok"/ },
    { target: `http://${'HOST'}/v1/pets?limit=0`, status: 400, body: /limit/ },
    { target: `http://${'HOST'}`, status: 404 },
    { target: `http://${'HOST'}?limit=1`, status: 404 },
    { target: `https://elsewhere.example/v1/pets/1`, status: 200, body: /"id":1/ },
  ];
  for (const tc of cases) {
    test(`GET ${tc.target} is ${tc.status}`, async () => {
      const target = tc.target.replace('HOST', host);
      const [res] = await raw(`GET ${target} HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${key}\r\nConnection: close\r\n\r\n`);
      assert.ok(res);
      assert.equal(res.status, tc.status, res.body.toString());
      if (tc.body) assert.match(res.body.toString(), tc.body);
      if (tc.status >= 400) assert.equal(errorBodyProblem(res), undefined);
    });
  }
  test('a POST in absolute-form creates, and the Location is on the Host the client named', async () => {
    const body = '{"name":"absolute","categoryId":7}';
    const [res] = await raw(`POST http://${host}/v1/pets HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${key}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`);
    assert.equal(res?.status, 201, res?.body.toString());
    assert.match(header(res, 'location') ?? '', new RegExp(`^http://${host}/v1/pets/[0-9]+$`));
  });
});

describe('HTTP versions', () => {
  for (const version of ['2.0', '0.9']) {
    test(`an HTTP/${version} request line is 400 and the connection closes`, async () => {
      const before = await pets();
      const responses = await raw(`GET /v1/pets HTTP/${version}\r\nAuthorization: Bearer ${key}\r\n\r\nGET /v1/pets HTTP/1.1\r\nHost: x\r\n\r\n`);
      assert.equal(responses.length, 1, 'nothing after it is served');
      const res = assertErrorResponse(responses[0], 400, 'invalid_request');
      assert.match(res.body.toString(), new RegExp(`HTTP/${version.replace('.', '\\.')}`));
      assert.equal(header(res, 'connection'), 'close');
      assert.ok(header(res, 'x-request-id'));
      assert.equal(await pets(), before);
    });
  }
  test('HTTP/1.0 without Host is still served', async () => {
    const [res] = await raw(`GET /v1/pets?limit=1 HTTP/1.0\r\nAuthorization: Bearer ${key}\r\n\r\n`);
    assert.equal(res?.status, 200);
  });
});

describe('transfer codings (RFC 9112 section 6.1)', () => {
  const chunkedBody = (text: string): string => `${text.length.toString(16)}\r\n${text}\r\n0\r\n\r\n`;
  for (const coding of ['gzip, chunked', 'deflate, chunked', 'x-custom, chunked']) {
    test(`Transfer-Encoding: ${coding} is 501 and stores nothing`, async () => {
      const before = await pets();
      // Plain JSON under the label: before the fix it was parsed, and stored, as if unencoded.
      const [res] = await raw(`POST /v1/pets HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${key}\r\n` +
        `Content-Type: application/json\r\nTransfer-Encoding: ${coding}\r\nConnection: close\r\n\r\n${chunkedBody('{"name":"coded","categoryId":1}')}`);
      const answer = assertErrorResponse(res, 501, 'not_implemented');
      assert.match(answer.body.toString(), /Transfer-Encoding/);
      assert.equal(await pets(), before);
    });
  }
  test('Transfer-Encoding: gzip and chunked as two fields is 501 too', async () => {
    const [res] = await raw(`POST /v1/pets HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\n` +
      `Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n${chunkedBody('{"name":"coded","categoryId":1}')}`);
    assertErrorResponse(res, 501, 'not_implemented');
  });
  test('Transfer-Encoding: Chunked (any case) is still read', async () => {
    const [res] = await raw(`POST /v1/pets HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\n` +
      `Transfer-Encoding: Chunked\r\nConnection: close\r\n\r\n${chunkedBody('{"name":"chunked","categoryId":1}')}`);
    assert.equal(res?.status, 201, res?.body.toString());
  });
});

/**
 * Writes the head of a request with Expect: 100-continue and no body; `onInterim` may send
 * the body once a 100 arrives. Resolves with every response until the server closes.
 */
function expectContinue(head: string, onInterim?: (socket: net.Socket) => void): Promise<{ responses: RawResponse[]; closedBy: 'server' | 'timeout' }> {
  return new Promise((resolve) => {
    const parser = new ResponseParser();
    const responses: RawResponse[] = [];
    const socket = net.connect(port, '127.0.0.1', () => socket.write(head));
    // A client waits about a second for the 100 before sending anyway; this one waits longer.
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ responses, closedBy: 'timeout' });
    }, 3000);
    socket.on('data', (chunk: Buffer) => {
      for (const r of parser.push(chunk)) {
        responses.push(r);
        if (r.status === 100) onInterim?.(socket);
      }
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ responses, closedBy: 'server' });
    });
  });
}

describe('Expect: 100-continue (RFC 9110 section 10.1.1)', () => {
  const head = (extra: string, length = 31): string =>
    `POST /v1/pets HTTP/1.1\r\nHost: ${host}\r\nContent-Length: ${length}\r\nExpect: 100-continue\r\n${extra}\r\n`;
  const cases: Array<{ name: string; head: () => string; status: number; code: string }> = [
    { name: 'no key: 401', head: () => head('Content-Type: application/json\r\n'), status: 401, code: 'unauthorized' },
    { name: 'a wrong key: 401', head: () => head('Authorization: Bearer wrong\r\nContent-Type: application/json\r\n'), status: 401, code: 'unauthorized' },
    { name: 'too large: 413', head: () => head(`Authorization: Bearer ${key}\r\nContent-Type: application/json\r\n`, 1_000_000), status: 413, code: 'payload_too_large' },
    { name: 'not JSON: 415', head: () => head(`Authorization: Bearer ${key}\r\nContent-Type: text/plain\r\n`), status: 415, code: 'unsupported_media_type' },
    { name: 'an unknown path: 404', head: () => head(`Authorization: Bearer ${key}\r\n`).replace('/v1/pets', '/v1/cats'), status: 404, code: 'not_found' },
  ];
  for (const tc of cases) {
    test(`${tc.name}, at once, without a 100 first, and the connection closes`, async () => {
      const before = await pets();
      const { responses, closedBy } = await expectContinue(tc.head());
      assert.deepEqual(responses.map((r) => r.status), [tc.status]);
      assertErrorResponse(responses[0], tc.status, tc.code);
      assert.equal(header(responses[0] as RawResponse, 'connection'), 'close');
      assert.equal(closedBy, 'server');
      assert.equal(await pets(), before);
    });
  }
  // A client that sends its body without waiting gets the (meaningless) 100 after all, so that
  // the connection stays usable: node:http closes one answered without a 100, and a request
  // pipelined behind would then be carried out with no answer ever reaching the client.
  test('a client that sent a too large body without waiting still sees its 413', async () => {
    const body = `{"name":"${'x'.repeat(100_000)}","categoryId":5}`;
    const responses = await raw(`POST /v1/pets HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${key}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${body.length}\r\nExpect: 100-continue\r\n\r\n${body}`);
    assert.deepEqual(responses.map((r) => r.status), [100, 413]);
  });
  const next = (name: string): string => `POST /v1/pets HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${key}\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${`{"name":"${name}","categoryId":1}`.length}\r\nConnection: close\r\n\r\n{"name":"${name}","categoryId":1}`;
  test('a refused request sent with its body, and a create pipelined behind it: both answered', async () => {
    const responses = await raw(`POST /v1/pets HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${key}\r\n` +
      `Content-Type: text/plain\r\nContent-Length: 1\r\nExpect: 100-continue\r\n\r\nx${next('behind415')}`);
    assert.deepEqual(responses.map((r) => r.status), [100, 415, 201]);
  });
  test('a keyless request sent with its body, and a create pipelined behind it: both answered', async () => {
    const responses = await raw(`POST /v1/pets HTTP/1.1\r\nHost: ${host}\r\n` +
      `Content-Type: application/json\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n{}${next('behind401')}`);
    assert.deepEqual(responses.map((r) => r.status), [100, 401, 201]);
  });
  test('a request that will be read gets its 100, then sends the body and gets its 201', async () => {
    const body = '{"name":"continued","categoryId":5}';
    const { responses } = await expectContinue(
      `POST /v1/pets HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${body.length}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n`,
      (socket) => socket.write(body),
    );
    assert.deepEqual(responses.map((r) => r.status), [100, 201]);
    assert.match((responses[1] as RawResponse).body.toString(), /"name":"continued"/);
  });
});

describe('authentication challenges (RFC 6750 section 3)', () => {
  for (const authorization of ['Basic dXNlcjpwYXNz', 'Digest username="x"', 'Token abc', 'Bearerabc']) {
    test(`Authorization: ${authorization} gets a challenge without an error code`, async () => {
      const res = await call(`${srv.url}/pets`, { headers: { authorization } });
      assert.equal(res.status, 401);
      assert.equal(res.headers.get('www-authenticate'), 'Bearer realm="petstore"');
      assert.match((res.json as { message: string }).message, /Bearer/);
    });
  }
  test('a wrong bearer key still gets error="invalid_token"', async () => {
    const res = await call(`${srv.url}/pets`, { key: 'not-a-key' });
    assert.match(res.headers.get('www-authenticate') ?? '', /^Bearer realm="petstore", error="invalid_token"/);
  });
});

describe('/healthz methods', () => {
  const healthz = (): string => `${srv.url.replace(/\/v1$/, '')}/healthz`;
  for (const method of ['DELETE', 'POST', 'PUT', 'PATCH', 'OPTIONS']) {
    test(`${method} /healthz is 405 with Allow: GET, HEAD`, async () => {
      const res = await call(healthz(), { method });
      assert.equal(res.status, 405);
      assert.equal(res.headers.get('allow'), 'GET, HEAD');
      assert.equal((res.json as { code: string }).code, 'method_not_allowed');
    });
  }
  test('GET and HEAD /healthz are 200', async () => {
    assert.equal((await call(healthz())).status, 200);
    assert.equal((await call(healthz(), { method: 'HEAD' })).status, 200);
  });
});

describe('query and body values', () => {
  test('limit=0020 is 20', async () => {
    const res = await call(`${srv.url}/pets?limit=0002`, { key });
    assert.equal(res.status, 200, res.text);
    assert.equal((res.json as unknown[]).length, 2);
    assert.equal((await call(`${srv.url}/pets?limit=0020`, { key })).status, 200);
  });
  for (const [label, json] of [['a lone surrogate', '"a\\ud800b"'], ['a NUL', '"a\\u0000b"'], ['a newline', '"a\\nb"'], ['DEL', '"a\u007fb"']]) {
    test(`a name with ${label} is 400 and stores nothing`, async () => {
      const before = await pets();
      const res = await call(`${srv.url}/pets`, {
        method: 'POST', key, headers: { 'content-type': 'application/json' }, body: `{"name":${json},"categoryId":1}`,
      });
      assert.equal(res.status, 400, res.text);
      assert.match((res.json as { message: string }).message, /name/);
      assert.equal(await pets(), before);
    });
  }
});
