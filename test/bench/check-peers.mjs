// Contract smoke check of the benchmark servers (the peers, and petstore itself): auth, 400,
// 401, 404, 413, 415, rate-limit and deprecation headers, 429. The benchmark is only fair
// if every server it compares answers the same way, so run this after changing a peer.
//
//   node check-peers.mjs [petstore] [fastify] [express] [fsync-baseline] [fastify-stack]   (default: all)
//
// fastify-stack (peers/fastify-stack.mjs) runs on PostgreSQL and Redis: this starts a throwaway
// one of each from the test support (`node build.mjs --tests` first), as the tests do.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BENCH_DIR, SERVERS, auth, http, jsonHeaders, startServer } from './lib.mjs';
import { DEPRECATION } from './peers/common.mjs';

const names = process.argv.slice(2).length ? process.argv.slice(2) : ['petstore', 'fastify', 'express', 'fsync-baseline', 'fastify-stack'];
/** Engines started for the peers on shared backends, closed at the end. */
const engines = [];

/** Registers fastify-stack with a fresh PostgreSQL and Redis of its own. */
async function withBackends(name) {
  const { startPostgres } = await import('../../build/test/support/postgres.js');
  const { startRedis } = await import('../../build/test/support/redis.js');
  const pg = await startPostgres({ settings: { fsync: 'on', synchronous_commit: 'on' } });
  engines.push(pg);
  const redis = await startRedis();
  engines.push(redis);
  SERVERS[name] = { script: join(BENCH_DIR, 'peers', 'fastify-stack.mjs'), args: ['--store', pg.url, '--limits', redis.url, '--reset'] };
}
const RATE_HEADERS = ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'ratelimit-policy', 'ratelimit'];

let failures = 0;
let passes = 0;

function checker(name) {
  return (label, ok, detail = '') => {
    if (ok) passes++;
    else {
      failures++;
      console.log(`  FAIL ${name}: ${label}${detail ? ` -- ${detail}` : ''}`);
    }
  };
}

function brief(r) {
  if (r.error) return `error ${r.error.message}`;
  return `${r.status} ${r.text.slice(0, 160)}`;
}

function isErrorBody(r, status, code) {
  return (
    r.status === status &&
    r.json &&
    r.json.status === status &&
    typeof r.json.message === 'string' &&
    (code === undefined || r.json.code === code)
  );
}

function hasRateHeaders(r) {
  return !r.error && RATE_HEADERS.every((h) => r.headers[h] !== undefined);
}

async function checkServer(name) {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-check-'));
  let server;
  try {
    server = await startServer(name, { data: join(dir, 'pets.json'), cpu: 0 });
  } catch (err) {
    failures++;
    console.log(`  FAIL ${name}: did not start: ${err.message}`);
    rmSync(dir, { recursive: true, force: true });
    return;
  }
  const ok = checker(name);
  const u = server.url;
  ok('first stdout line has the base URL', !server.notFirst, server.notFirst);
  const full = name !== 'fsync-baseline'; // the fsync baseline only has GET/POST /pets
  try {
    // Creates.
    const ids = [];
    for (let i = 1; i <= 25; i++) {
      const r = await http(`${u}/pets`, {
        method: 'POST',
        headers: jsonHeaders(),
        body: JSON.stringify({ name: `pet-${i}`, categoryId: i, status: ['available', 'pending', 'sold'][i % 3], id: 999 }),
      });
      if (i === 1) {
        ok('POST valid -> 201 Pet', r.status === 201 && r.json?.name === 'pet-1' && r.json?.categoryId === 1, brief(r));
        ok('POST ignores a client id', r.json?.id !== 999, brief(r));
        ok('POST content-type json', /^application\/json/.test(r.headers?.['content-type'] ?? ''), r.headers?.['content-type']);
        ok('POST has rate headers', hasRateHeaders(r), JSON.stringify(r.headers));
      }
      ids.push(r.json?.id);
    }
    ok('ids sequential from 1', ids.every((id, i) => id === i + 1), ids.join(','));

    // Listing.
    let r = await http(`${u}/pets`, { headers: auth() });
    ok('GET /pets default limit 20', r.status === 200 && Array.isArray(r.json) && r.json.length === 20, brief(r));
    ok('GET /pets ascending ids', Array.isArray(r.json) && r.json.every((p, i) => i === 0 || p.id > r.json[i - 1].id));
    ok('GET /pets rate headers', hasRateHeaders(r), JSON.stringify(r.headers));
    ok('GET /pets full page has Link rel=next', /rel="?next"?/.test(r.headers?.link ?? ''), r.headers?.link);
    r = await http(`${u}/pets?limit=3&status=sold`, { headers: auth() });
    ok(
      'GET /pets?limit=3&status=sold',
      r.status === 200 && r.json?.length === 3 && r.json.every((p) => p.status === 'sold'),
      brief(r),
    );
    ok('next link keeps status and limit', /status=sold/.test(r.headers?.link ?? '') && /limit=3/.test(r.headers?.link ?? ''), r.headers?.link);
    const next = /<([^>]+)>;\s*rel="?next"?/.exec(r.headers?.link ?? '')?.[1];
    if (next) {
      const r2 = await http(next, { headers: auth() });
      ok('next page continues after the last id', r2.status === 200 && r2.json?.[0]?.id > r.json.at(-1).id, brief(r2));
    }
    for (const q of ['limit=0', 'limit=101', 'limit=abc', 'limit=1.5', 'limit=1e1', 'limit=', 'limit=1&limit=2', 'status=foo', 'status=']) {
      r = await http(`${u}/pets?${q}`, { headers: auth() });
      ok(`GET /pets?${q} -> 400 invalid_request`, isErrorBody(r, 400, 'invalid_request'), brief(r));
    }
    r = await http(`${u}/pets?limit=0`, { headers: auth() });
    ok('400 message names the parameter', /limit/.test(r.json?.message ?? ''), r.json?.message);
    ok('400 has rate headers', hasRateHeaders(r));

    // Authentication.
    r = await http(`${u}/pets`);
    ok('no key -> 401 unauthorized', isErrorBody(r, 401, 'unauthorized'), brief(r));
    ok('401 WWW-Authenticate Bearer realm', /^Bearer realm="petstore"/.test(r.headers?.['www-authenticate'] ?? ''), r.headers?.['www-authenticate']);
    ok('401 has rate headers', hasRateHeaders(r));
    r = await http(`${u}/pets`, { headers: auth('wrong-key') });
    ok('wrong key -> 401', isErrorBody(r, 401, 'unauthorized'), brief(r));
    ok('wrong key -> error="invalid_token"', /error="invalid_token"/.test(r.headers?.['www-authenticate'] ?? ''), r.headers?.['www-authenticate']);
    ok('401 does not echo the key', !r.text?.includes('wrong-key'));
    r = await http(`${u}/pets`, { headers: { Authorization: 'Basic YmVuY2gta2V5' } });
    ok('Basic scheme -> 401', r.status === 401, brief(r));
    r = await http(`${u}/pets?limit=1`, { headers: { Authorization: 'bEaReR bench-key' } });
    ok('scheme is case-insensitive', r.status === 200, brief(r));

    // Bodies.
    const post = (body, headers = jsonHeaders()) => http(`${u}/pets`, { method: 'POST', headers, body });
    r = await post('{"name":"x","categoryId":1}', { ...auth(), 'Content-Type': 'text/plain' });
    ok('POST text/plain -> 415', isErrorBody(r, 415, 'unsupported_media_type'), brief(r));
    r = await post('name=x&categoryId=1', { ...auth(), 'Content-Type': 'application/x-www-form-urlencoded' });
    ok('POST form -> 415', isErrorBody(r, 415, 'unsupported_media_type'), brief(r));
    r = await post(JSON.stringify({ name: 'a'.repeat(70 * 1024), categoryId: 1 }));
    ok('POST 70 KiB -> 413', isErrorBody(r, 413, 'payload_too_large'), brief(r));
    for (const [label, body] of [
      ['missing name', '{"categoryId":1}'],
      ['missing categoryId', '{"name":"x"}'],
      ['empty name', '{"name":"","categoryId":1}'],
      ['blank name', '{"name":"   ","categoryId":1}'],
      ['name too long', JSON.stringify({ name: 'n'.repeat(300), categoryId: 1 })],
      ['categoryId string', '{"name":"x","categoryId":"1"}'],
      ['categoryId 1.5', '{"name":"x","categoryId":1.5}'],
      ['categoryId unsafe', '{"name":"x","categoryId":9007199254740993}'],
      ['bad status', '{"name":"x","categoryId":1,"status":"gone"}'],
      ['array body', '[{"name":"x","categoryId":1}]'],
      ['not JSON', '{"name":'],
      ['empty body', ''],
    ]) {
      r = await post(body);
      ok(`POST ${label} -> 400`, isErrorBody(r, 400, 'invalid_request'), brief(r));
    }
    r = await post('{"name":"x","categoryId":1}', { ...auth('wrong-key'), 'Content-Type': 'application/json' });
    ok('POST wrong key -> 401', r.status === 401, brief(r));
    r = await post('{"name":"proto","categoryId":1,"__proto__":{"polluted":true}}');
    ok('POST with __proto__ key -> 201 or 400', r.status === 201 || r.status === 400, brief(r));
    ok('__proto__ did not pollute', r.json?.polluted === undefined && ({}).polluted === undefined, brief(r));

    if (full) {
      // The deprecated single-pet lookup.
      const dep = (res) =>
        /^@\d+$/.test(res.headers?.deprecation ?? '') &&
        res.headers?.sunset === 'Thu, 05 Dec 2030 00:00:00 GMT' &&
        /<[^>]+\/v1\/pets>;\s*rel="?successor-version"?/.test(res.headers?.link ?? '');
      r = await http(`${u}/pets/2`, { headers: auth() });
      ok('GET /pets/2 -> 200 Pet', r.status === 200 && r.json?.id === 2 && r.json?.name === 'pet-2', brief(r));
      ok('GET /pets/2 deprecation headers', dep(r), JSON.stringify(r.headers));
      ok('Deprecation is the value in peers/common.mjs', r.headers?.deprecation === DEPRECATION, r.headers?.deprecation);
      ok('GET /pets/2 rate headers', hasRateHeaders(r));
      r = await http(`${u}/pets/999999`, { headers: auth() });
      ok('GET /pets/999999 -> 404 not_found', isErrorBody(r, 404, 'not_found'), brief(r));
      ok('404 deprecation headers', dep(r), JSON.stringify(r.headers));
      for (const id of ['abc', '1.0', '9223372036854775808', '0x10']) {
        r = await http(`${u}/pets/${id}`, { headers: auth() });
        ok(`GET /pets/${id} -> 400`, isErrorBody(r, 400, 'invalid_request'), brief(r));
      }
      ok('400 deprecation headers', dep(r), JSON.stringify(r.headers));
      r = await http(`${u}/pets/9223372036854775807`, { headers: auth() });
      ok('GET /pets/<int64 max> -> 404', isErrorBody(r, 404, 'not_found'), brief(r));
      r = await http(`${u}/pets/2`);
      ok('GET /pets/2 without key -> 401', r.status === 401, brief(r));
      ok('401 on /pets/{id} has deprecation headers', dep(r), JSON.stringify(r.headers));
      r = await http(`${u}/nowhere`, { headers: auth() });
      ok('unknown path -> 404', isErrorBody(r, 404, 'not_found'), brief(r));
      r = await http(`${u}/nowhere`);
      ok('unknown path without key -> 401 (auth first)', r.status === 401, brief(r));
    }

    // Rate limit: free-demo-key has 60 per minute.
    let last;
    for (let i = 0; i < 61; i++) last = await http(`${u}/pets?limit=1`, { headers: auth('free-demo-key') });
    ok('61st request of a free key -> 429 rate_limited', isErrorBody(last, 429, 'rate_limited'), brief(last));
    ok('429 Retry-After whole seconds', /^\d+$/.test(last.headers?.['retry-after'] ?? ''), last.headers?.['retry-after']);
    ok('429 X-RateLimit-Remaining 0', last.headers?.['x-ratelimit-remaining'] === '0', last.headers?.['x-ratelimit-remaining']);
    ok('429 X-RateLimit-Limit 60', last.headers?.['x-ratelimit-limit'] === '60', last.headers?.['x-ratelimit-limit']);
    ok(
      '429 RateLimit-Policy',
      last.headers?.['ratelimit-policy'] === '"minute";q=60;w=60, "day";q=1000;w=86400',
      last.headers?.['ratelimit-policy'],
    );

    // Last, as they may take the server down: uploads past the limit, one far past it. Past a discard cap a
    // server may close after the 413 is flushed, and a client still uploading may then see a
    // reset (either is allowed, so that only informs), but it must survive.
    r = await post({ stream: 1024 * 1024 });
    ok('POST 1 MiB chunked -> 413 reaches the client', isErrorBody(r, 413, 'payload_too_large'), brief(r));
    r = await post({ stream: 64 * 1024 * 1024 });
    console.log(`  note ${name}: POST 64 MiB chunked -> ${brief(r)}`);
    await new Promise((resolve) => setTimeout(resolve, 300));
    r = await http(`${u}/pets?limit=1`, { headers: auth() });
    ok('still serving after a 64 MiB upload', r.status === 200, `${brief(r)}; stderr: ${server.stderr().trim().slice(-600)}`);
  } finally {
    const { code } = await server.stop();
    ok('exits 0 on SIGTERM', code === 0, `code ${code}`);
    rmSync(dir, { recursive: true, force: true });
  }
}

for (const name of names) {
  const before = failures;
  if (name === 'fastify-stack') await withBackends(name);
  console.log(`${name}:`);
  await checkServer(name);
  console.log(`  ${failures === before ? 'ok' : `${failures - before} failed`}`);
}
for (const engine of engines) await engine.close();
console.log(`${passes} passed, ${failures} failed`);
process.exitCode = failures === 0 ? 0 : 1;
