// Response header names are written in one case: each word capitalized, as the RFCs and node's
// own headers (Date, Connection, Keep-Alive) write them, with the usual exceptions. Read raw,
// since every client library hides the case.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { KEYS, startBundle, tempDir, testConfig, writeConfig } from '../support/bundle.js';

const EXCEPTIONS = new Set(['WWW-Authenticate', 'X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset', 'RateLimit-Policy', 'RateLimit']);

/** Every header name of every answer in `raw` (bodies are JSON on one line, skipped). */
function names(raw: string): string[] {
  const out: string[] = [];
  for (const head of raw.split(/HTTP\/1\.1 \d{3} [^\r]*\r\n/).slice(1)) {
    for (const line of head.slice(0, head.indexOf('\r\n\r\n')).split('\r\n')) out.push(line.slice(0, line.indexOf(':')));
  }
  return out;
}

test('every response header name is capitalized word by word (or one of the named exceptions)', async () => {
  const dir = tempDir();
  const srv = await startBundle(['--config', writeConfig(dir, testConfig({ cors: { origins: ['*'] } })), '--memory'], { cwd: dir });
  try {
    const { port } = new URL(srv.url);
    const body = '{"name":"A","categoryId":1}';
    const auth = `Authorization: Bearer ${KEYS.enterprise}\r\n`;
    const raw = await new Promise<string>((resolve, reject) => {
      const s = connect(Number(port), '127.0.0.1');
      let got = '';
      s.setEncoding('latin1');
      s.on('data', (d: string) => (got += d));
      s.on('end', () => resolve(got));
      s.on('error', reject);
      s.write(
        `POST /v1/pets HTTP/1.1\r\nHost: x\r\nOrigin: http://a\r\n${auth}Idempotency-Key: k1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}` +
        `POST /v1/pets HTTP/1.1\r\nHost: x\r\n${auth}Idempotency-Key: k1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}` +
        `GET /v1/pets/1 HTTP/1.1\r\nHost: x\r\n${auth}\r\n` +
        `GET /v1/pets?limit=1 HTTP/1.1\r\nHost: x\r\n${auth}\r\n` +
        `DELETE /v1/pets HTTP/1.1\r\nHost: x\r\n${auth}\r\n` +
        'GET /v1/pets HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
      );
    });
    const seen = names(raw);
    for (const expected of ['Location', 'Idempotent-Replayed', 'X-Request-Id', 'Content-Type', 'Content-Length', 'Cache-Control', 'Link', 'Deprecation', 'Sunset', 'Allow', 'WWW-Authenticate', 'Access-Control-Allow-Origin', 'Date']) {
      assert.ok(seen.includes(expected), `${expected} was not seen among ${[...new Set(seen)].join(', ')}`);
    }
    const odd = [...new Set(seen)].filter((n) => !EXCEPTIONS.has(n) && !/^[A-Z][a-z]*(-[A-Z][a-z]*)*$/.test(n));
    assert.deepEqual(odd, [], `names not in the one case: ${odd.join(', ')}`);
  } finally {
    await srv.stop();
  }
});
