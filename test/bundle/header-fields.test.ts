// Header fields a hostile client can use to make the service and a proxy in front disagree
// about what a request said: more header lines than node keeps by default (2000), a second
// Authorization, a Host with an impossible port, Transfer-Encoding in HTTP/1.0. Raw sockets
// against the built bundle.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { KEYS, startBundle, tempDir, testConfig, writeConfig, type Running } from '../support/bundle.js';
import { errorBodyProblem, errorCode, exchange, header, listAll, portOf, type RawResponse } from '../support/wire.js';

const key = KEYS.enterprise;
/** 2,100 tiny header lines (about 10 KiB, under the 16 KiB header limit). */
const FILLERS = 'a:b\r\n'.repeat(2100);

let srv: Running;
let port: number;

before(async () => {
  const dir = tempDir();
  srv = await startBundle(['--config', writeConfig(dir, testConfig()), '--memory'], { cwd: dir });
  port = portOf(srv.url);
});

after(async () => {
  assert.equal(await srv.stop(), 0);
});

async function one(request: string): Promise<RawResponse> {
  const result = await exchange(port, Buffer.from(request), { timeoutMs: 5_000 });
  assert.equal(result.parseError, undefined);
  const [first] = result.responses;
  assert.ok(first, `an answer to ${JSON.stringify(request.slice(0, 60))}`);
  return first;
}

function createRequest(extra: string, version = '1.1', chunked = false, connection = 'close'): string {
  const body = JSON.stringify({ name: 'smuggled', categoryId: 1 });
  const framing = chunked
    ? `Transfer-Encoding: chunked\r\n\r\n${Buffer.byteLength(body).toString(16)}\r\n${body}\r\n0\r\n\r\n`
    : `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
  return `POST /v1/pets HTTP/${version}\r\nHost: x\r\n${extra}Authorization: Bearer ${key}\r\nContent-Type: application/json\r\nConnection: ${connection}\r\n${framing}`;
}

async function petCount(): Promise<number> {
  return (await listAll(srv.url, key)).length;
}

function assertError(r: RawResponse, status: number, code: string, message?: RegExp): void {
  assert.equal(r.status, status, r.body.toString());
  assert.equal(errorBodyProblem(r), undefined);
  assert.equal(errorCode(r), code);
  if (message) assert.match(JSON.parse(r.body.toString()).message as string, message);
}

describe('more than 2000 header lines: no header is dropped unchecked', () => {
  for (const fillers of ['', FILLERS]) {
    const label = fillers === '' ? 'alone' : 'behind 2100 fillers';
    test(`Transfer-Encoding: gzip, chunked ${label}: 501, nothing stored`, async () => {
      const before = await petCount();
      const body = JSON.stringify({ name: 'smuggled', categoryId: 1 });
      const r = await one(
        `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\n${fillers}` +
        `Transfer-Encoding: gzip, chunked\r\nConnection: close\r\n\r\n${Buffer.byteLength(body).toString(16)}\r\n${body}\r\n0\r\n\r\n`,
      );
      assertError(r, 501, 'not_implemented');
      assert.equal(await petCount(), before);
    });

    test(`Expect: nonsense ${label}: 417, nothing stored`, async () => {
      const before = await petCount();
      const r = await one(createRequest(`${fillers}Expect: nonsense\r\n`));
      assertError(r, 417, 'expectation_failed');
      assert.equal(await petCount(), before);
    });

    test(`a second Host ${label}: 400`, async () => {
      const r = await one(`GET /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n${fillers}Host: evil.example\r\nConnection: close\r\n\r\n`);
      assertError(r, 400, 'invalid_request', /Host header must be given only once/);
    });
  }

  test('a key behind 2100 fillers is read: 200', async () => {
    const r = await one(`GET /v1/pets HTTP/1.1\r\nHost: x\r\n${FILLERS}Authorization: Bearer ${key}\r\nConnection: close\r\n\r\n`);
    assert.equal(r.status, 200, r.body.toString());
  });
});

describe('Authorization given twice: 400, whichever comes first', () => {
  const pairs: Array<[string, string]> = [[`Bearer ${key}`, `Bearer ${KEYS.free}`], [`Bearer ${KEYS.free}`, `Bearer ${key}`], [`Bearer ${key}`, 'junk']];
  for (const [first, second] of pairs) {
    test(`${first.slice(0, 12)}... then ${second.slice(0, 12)}...`, async () => {
      const r = await one(`GET /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: ${first}\r\nauthorization: ${second}\r\nConnection: close\r\n\r\n`);
      assertError(r, 400, 'invalid_request', /Authorization header must be given only once/);
      assert.equal(header(r, 'x-ratelimit-limit'), undefined, 'refused before any key is charged');
    });
  }

  test('a second Authorization on a create stores nothing', async () => {
    const before = await petCount();
    const r = await one(createRequest(`Authorization: Bearer ${KEYS.free}\r\n`));
    assertError(r, 400, 'invalid_request');
    assert.equal(await petCount(), before);
  });
});

describe('Host with a port out of range: links use the listening address', () => {
  const linkFor = async (host: string): Promise<string | undefined> => {
    const r = await one(`GET /v1/pets/999999999 HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${key}\r\nConnection: close\r\n\r\n`);
    assert.equal(r.status, 404);
    return header(r, 'link');
  };
  for (const host of ['evil.example:99999', 'evil.example:0', 'evil.example:65536', '[::1]:70000']) {
    test(host, async () => {
      assert.equal(await linkFor(host), `<${srv.url}/pets>; rel="successor-version"`);
    });
  }

  test('a port in range is used: evil.example:65535, [::1]:1', async () => {
    assert.equal(await linkFor('evil.example:65535'), '<http://evil.example:65535/v1/pets>; rel="successor-version"');
    assert.equal(await linkFor('[::1]:1'), '<http://[::1]:1/v1/pets>; rel="successor-version"');
  });
});

describe('HTTP/1.0 with Transfer-Encoding: 400, connection closed, nothing stored', () => {
  test('chunked', async () => {
    const before = await petCount();
    const result = await exchange(port, Buffer.from(createRequest('', '1.0', true, 'keep-alive') + `GET /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n\r\n`), { timeoutMs: 5_000 });
    assert.equal(result.responses.length, 1, 'the connection closes after the 400: the request behind it is not read');
    const [r] = result.responses as [RawResponse];
    assertError(r, 400, 'invalid_request', /Transfer-Encoding is not allowed in an HTTP\/1\.0 request/);
    assert.equal(header(r, 'connection'), 'close');
    assert.equal(result.end, 'closed');
    assert.equal(await petCount(), before);
  });

  test('HTTP/1.0 with Content-Length is still served: 201', async () => {
    const r = await one(createRequest('', '1.0'));
    assert.equal(r.status, 201, r.body.toString());
  });
});
