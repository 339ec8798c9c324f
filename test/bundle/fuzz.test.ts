// Bad input over raw sockets (quick version: 2,000 cases; test/reliability/long.mjs runs more):
// malformed request lines and headers, wrong and huge Content-Length, chunked bodies cut
// short, invalid UTF-8, deeply nested and enormous JSON, numbers beyond the safe range,
// __proto__ and constructor keys, duplicated and percent-encoded query parameters, unknown
// paths, every method. No 5xx, no crash, every answer valid HTTP, every 4xx an Error body
// with its status, and nothing rejected changed the store. Reproduce with FUZZ_SEED=<seed>.
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { KEYS, call, startBundle, tempDir, testConfig, writeConfig } from '../support/bundle.js';
import { KNOWN, fuzzBundle, type FuzzFindings } from '../reliability/fuzz.js';
import { exchange, listAll, portOf, seedFrom } from '../support/wire.js';

const seed = seedFrom('FUZZ_SEED');
const cases = Number(process.env.FUZZ_CASES ?? 2000);
let findings: FuzzFindings;

before(async () => {
  findings = await fuzzBundle(cases, seed);
});

function report(list: readonly string[]): string {
  return `fuzz seed ${seed} (rerun with FUZZ_SEED=${seed}): ${list.length} problems:\n${list.slice(0, 25).join('\n')}`;
}

test(`${cases} generated bad requests: valid answers, Error bodies, no 5xx, no crash, store unchanged`, (t) => {
  t.diagnostic(`fuzz seed ${seed} (rerun with FUZZ_SEED=${seed})`);
  t.diagnostic(JSON.stringify(findings.stats));
  assert.equal(findings.problems.length, 0, report(findings.problems));
  assert.ok(findings.stats.responses > cases * 0.8, `only ${findings.stats.responses} responses for ${cases} cases`);
});

for (const issue of Object.values(KNOWN)) {
  test(`fixed issue does not come back: ${issue.slice(0, 60)}...`, () => {
    const seen = findings.known.get(issue) ?? [];
    assert.equal(seen.length, 0, report(seen));
  });
}

test('pipelined creates followed by an unparseable request: every create answered 201, in order, then the 400', async () => {
  const dir = tempDir();
  const srv = await startBundle(['--config', writeConfig(dir), '--data', join(dir, 'pets.json')], { cwd: dir });
  try {
    const post = (name: string): string => {
      const body = JSON.stringify({ name, categoryId: 1 });
      return `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${KEYS.enterprise}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${body.length}\r\n\r\n${body}`;
    };
    const names = ['p1', 'p2', 'p3', 'p4'];
    const res = await exchange(portOf(srv.url), Buffer.from(`${names.map(post).join('')}BOGUS\r\n\r\n`));
    const stored = (await listAll(srv.url, KEYS.enterprise)).map((p) => p.name);
    assert.deepEqual(stored, names, 'the creates before the bad request are stored');
    assert.deepEqual(res.responses.map((r) => r.status), [201, 201, 201, 201, 400], 'and each is answered, in order, before the 400');
  } finally {
    srv.proc.kill('SIGKILL');
    await srv.exited;
  }
});

test('pipelined creates answered slowly, an unparseable request, then the client half-closes: every create answered 201, in order, then one 400', async () => {
  const dir = tempDir();
  const admin = 'admin-key-for-tests-0123';
  const srv = await startBundle(['--config', writeConfig(dir, testConfig({ admin: { key: admin } })), '--data', join(dir, 'pets.json')], { cwd: dir });
  try {
    // Each create waits 300 ms (an fsync on a busy disk): the client has sent everything and
    // half-closed (the exchange does so after 100 ms without an answer) long before.
    const fault = await call(`${srv.url.replace(/\/v1$/, '')}/__admin/faults`, {
      method: 'POST', key: admin, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ operation: 'createPet', delayMs: 300, count: 3 }),
    });
    assert.equal(fault.status, 200, fault.text);
    const post = (name: string): string => {
      const body = JSON.stringify({ name, categoryId: 1 });
      return `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${KEYS.enterprise}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${body.length}\r\n\r\n${body}`;
    };
    const names = ['s1', 's2', 's3'];
    const res = await exchange(portOf(srv.url), Buffer.from(`${names.map(post).join('')}BOGUS\r\n\r\n`), { quietMs: 100 });
    assert.ok(res.halfClosed, 'the client half-closed before the answers');
    assert.equal(res.parseError, undefined);
    assert.equal(res.end, 'closed');
    assert.deepEqual(res.responses.map((r) => r.status), [201, 201, 201, 400], 'each create answered, in order, before the 400');
    assert.deepEqual((await listAll(srv.url, KEYS.enterprise)).map((p) => p.name), names);
  } finally {
    srv.proc.kill('SIGKILL');
    await srv.exited;
  }
});
