// The request journal as a data structure: the ring, its bounds, filters, since, merging,
// the bound of several rings as one, waits, and what an entry keeps of the exchange.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError } from '../../src/core/index.js';
import {
  ENTRY_OVERHEAD_BYTES, JOURNAL_MAX_BODY_BYTES, JOURNAL_MAX_HEADER_CHARS, RequestJournal, countSlices, entryBytes, journalEntry, journalPageJson,
  mergeSlices, parseJournalFilter, queryObject, recordOf, type Exchanged, type JournalFilter, type JournalRecord,
} from '../../src/admin/index.js';
import { boundRings } from '../../src/admin/journal.js';

const OPS = ['listPets', 'createPet', 'getPet'];
let n = 0;
function rec(over: Partial<JournalRecord> = {}): JournalRecord {
  n++;
  return {
    requestId: `r${n}`, at: Date.UTC(2026, 0, 1) + n, method: 'GET', path: '/v1/pets', rawQuery: '', operation: 'listPets', key: 'demo',
    headers: ['host', '127.0.0.1', 'authorization', 'Bearer demo'], status: 200, durationMs: 1.5, idempotencyKey: null, bodyJson: undefined,
    responseHeaders: ['content-type', 'application/json; charset=utf-8'], responseJson: '[]', ...over,
  };
}
const ALL: JournalFilter = { limit: 1000 };

function filter(q: Record<string, string | string[]>): JournalFilter {
  const f = parseJournalFilter(q, OPS);
  if (f instanceof ApiError) throw new Error(f.message);
  return f;
}

function page(j: RequestJournal, f: JournalFilter): JournalRecord[] {
  const merged = mergeSlices([j.slice(f)], f);
  if (merged instanceof ApiError) throw new Error(merged.message);
  return merged.records;
}

test('the ring keeps the newest capacity entries, oldest first, and counts what it dropped', () => {
  const j = new RequestJournal(3);
  const recs = [rec(), rec(), rec(), rec(), rec()];
  for (const r of recs) j.record(r);
  assert.equal(j.size, 3);
  assert.equal(j.dropped, 2);
  assert.deepEqual(page(j, ALL), recs.slice(2));
  j.record(rec());
  assert.equal(page(j, ALL)[0], recs[3]);
  j.clear();
  assert.equal(j.size, 0);
  assert.equal(j.dropped, 0, 'dropped counts since the last clear');
  assert.equal(j.bytes, 0);
});

test('capacity 0 records nothing', () => {
  const j = new RequestJournal(0);
  j.record(rec());
  assert.equal(j.size, 0);
  assert.equal(j.dropped, 0);
});

test('the byte budget evicts the oldest entries too, and bytes are counted both ways', () => {
  const big = 'x'.repeat(10_000);
  const one = entryBytes(rec({ bodyJson: JSON.stringify(big) }));
  const j = new RequestJournal(1000, one * 3 + 50);
  for (let i = 0; i < 10; i++) j.record(rec({ bodyJson: JSON.stringify(big) }));
  assert.equal(j.size, 3);
  assert.equal(j.dropped, 7);
  assert.ok(j.bytes <= one * 3 + 50);
  j.record(rec());
  assert.ok(j.bytes <= one * 3 + 50);
});

test('filters: method, path exactly, status, key; limit; since', () => {
  const j = new RequestJournal(100);
  const a = rec({ method: 'POST', status: 201 });
  const b = rec({ path: '/v1/pets/1', key: null, status: 401 });
  const c = rec({ method: 'POST', status: 429, key: 'ci' });
  const d = rec();
  for (const r of [a, b, c, d]) j.record(r);
  assert.deepEqual(page(j, filter({ method: 'post' })), [a, c]);
  assert.deepEqual(page(j, filter({ path: '/v1/pets' })), [a, c, d]);
  assert.deepEqual(page(j, filter({ path: '/v1/pets/1' })), [b]);
  assert.deepEqual(page(j, filter({ status: '429' })), [c]);
  assert.deepEqual(page(j, filter({ key: 'ci' })), [c]);
  assert.deepEqual(page(j, filter({ limit: '2' })), [a, b]);
  assert.deepEqual(page(j, filter({ since: b.requestId })), [c, d]);
  assert.deepEqual(page(j, filter({ since: b.requestId, limit: '1' })), [c]);
  assert.deepEqual(page(j, filter({ since: d.requestId })), []);
  assert.equal(countSlices([j.slice(filter({ method: 'POST' }))], filter({ method: 'POST' })), 2);
  assert.equal(countSlices([j.slice(filter({ since: a.requestId }))], filter({ since: a.requestId })), 3);
});

test('since names the latest entry with that id; an unknown one is a 400 saying why', () => {
  const j = new RequestJournal(100);
  const first = rec({ requestId: 'client-chosen' });
  const x = rec();
  const again = rec({ requestId: 'client-chosen' });
  const y = rec();
  for (const r of [first, x, again, y]) j.record(r);
  assert.deepEqual(page(j, filter({ since: 'client-chosen' })), [y]);
  const unknown = mergeSlices([j.slice(ALL)], filter({ since: 'nope' }));
  assert.ok(unknown instanceof ApiError);
  assert.equal(unknown.status, 400);
  assert.match(unknown.message, /since: no request with id "nope".*evicted/);
});

test('slices of several workers merge in time order, ties in worker order, dropped summed', () => {
  const w1 = new RequestJournal(2);
  const w2 = new RequestJournal(10);
  const t = Date.UTC(2026, 0, 1);
  const a = rec({ at: t + 1 });
  const b = rec({ at: t + 5 });
  const c = rec({ at: t + 3 });
  const d = rec({ at: t + 5 });
  const e = rec({ at: t + 9 });
  w1.record(rec({ at: t })); // evicted
  w1.record(a);
  w1.record(b);
  w2.record(c);
  w2.record(d);
  w2.record(e);
  const merged = mergeSlices([w1.slice(ALL), w2.slice(ALL)], ALL);
  assert.ok(!(merged instanceof ApiError));
  assert.deepEqual(merged.records, [a, c, b, d, e]);
  assert.equal(merged.dropped, 1);
  const after = mergeSlices([w1.slice(ALL), w2.slice(ALL)], { since: c.requestId, limit: 2 });
  assert.ok(!(after instanceof ApiError));
  assert.deepEqual(after.records, [b, d]);
});

test('an entry as shown: RFC 3339 time, the query as an object, the body as JSON, nulls kept', () => {
  const r = rec({
    at: Date.UTC(2026, 4, 6, 7, 8, 9, 10), method: 'POST', rawQuery: 'limit=5&status=sold&status=pending&q=a%20b', key: null,
    status: 201, idempotencyKey: 'k-1', bodyJson: '{"name":"Rex","categoryId":1}',
  });
  const entry = journalEntry(r);
  assert.deepEqual(JSON.parse(JSON.stringify(entry)), {
    requestId: r.requestId, time: '2026-05-06T07:08:09.010Z', method: 'POST', path: '/v1/pets',
    query: { limit: '5', status: ['sold', 'pending'], q: 'a b' }, operation: 'listPets', key: null,
    headers: { host: '127.0.0.1', authorization: 'Bearer demo' }, status: 201, durationMs: 1.5,
    idempotencyKey: 'k-1', body: { name: 'Rex', categoryId: 1 },
    response: { status: 201, headers: { 'content-type': 'application/json; charset=utf-8' }, body: [] },
  });
  assert.equal(journalEntry(rec()).body, null);
  assert.equal(journalEntry(rec({ responseJson: undefined })).response.body, null);
  const doc = JSON.parse(journalPageJson({ records: [r], dropped: 4 })) as { requests: unknown[]; dropped: number };
  assert.equal(doc.dropped, 4);
  assert.equal(doc.requests.length, 1);
  assert.equal(Object.getPrototypeOf(queryObject('__proto__=x')), null, 'a __proto__ parameter stays a parameter');
});

const BAD_FILTERS: Array<[string, Record<string, string | string[]>, string]> = [
  ['an unknown filter', { verb: 'GET' }, '"verb" is not a filter'],
  ['a filter given twice', { method: ['GET', 'POST'] }, 'method is given 2 times'],
  ['an empty value', { key: '' }, 'key must be 1 to 2048 characters'],
  ['a method that is no token', { method: 'GE T' }, 'method must be an HTTP method'],
  ['a relative path', { path: 'v1/pets' }, 'path must start with "/"'],
  ['status text', { status: 'ok' }, 'status must be an HTTP status'],
  ['status 600', { status: '600' }, 'status must be an HTTP status'],
  ['limit 0', { limit: '0' }, 'limit must be an integer from 1 to 1000'],
  ['limit 1001', { limit: '1001' }, 'limit must be an integer from 1 to 1000'],
  ['limit 1e2', { limit: '1e2' }, 'limit must be an integer'],
  ['a header without a colon', { header: 'x-trace' }, 'header must be "name:value"'],
  ['a header without a name', { header: ':abc' }, 'header must be "name:value"'],
  ['a header name that is no token', { header: 'x trace:1' }, 'header must be "name:value"'],
  ['too many headers', { header: Array.from({ length: 17 }, (_, i) => `h${i}:v`) }, 'header is given 17 times; at most 16'],
  ['an unknown operation', { operation: 'deletePet' }, 'operation must be one of listPets, createPet, getPet'],
  ['a relative path prefix', { pathPrefix: 'v1' }, 'pathPrefix must start with "/"'],
  ['atLeast on a listing', { atLeast: '1' }, '"atLeast" is not a filter'],
  ['timeoutMs on a listing', { timeoutMs: '1' }, '"timeoutMs" is not a filter'],
];
for (const [name, q, says] of BAD_FILTERS) {
  test(`a bad filter is a 400 naming it: ${name}`, () => {
    const f = parseJournalFilter(q, OPS);
    assert.ok(f instanceof ApiError);
    assert.equal(f.status, 400);
    assert.ok(f.message.includes(says), `${says} in: ${f.message}`);
  });
}

const BAD_WAITS: Array<[string, Record<string, string | string[]>, string]> = [
  ['atLeast 0', { atLeast: '0' }, 'atLeast must be an integer from 1 to 100000'],
  ['atLeast -1', { atLeast: '-1' }, 'atLeast must be an integer'],
  ['atLeast past the largest journal', { atLeast: '100001' }, 'atLeast must be an integer from 1 to 100000'],
  ['atLeast text', { atLeast: 'many' }, 'atLeast must be an integer'],
  ['timeoutMs past a minute', { atLeast: '1', timeoutMs: '60001' }, 'timeoutMs must be an integer from 0 to 60000'],
  ['timeoutMs negative', { atLeast: '1', timeoutMs: '-1' }, 'timeoutMs must be an integer'],
  ['timeoutMs fractional', { atLeast: '1', timeoutMs: '1.5' }, 'timeoutMs must be an integer'],
  ['timeoutMs without atLeast', { timeoutMs: '100' }, 'timeoutMs goes with atLeast'],
  ['atLeast given twice', { atLeast: ['1', '2'] }, 'atLeast is given 2 times'],
];
for (const [name, q, says] of BAD_WAITS) {
  test(`a bad wait of a count is a 400 naming it: ${name}`, () => {
    const f = parseJournalFilter(q, OPS, true);
    assert.ok(f instanceof ApiError);
    assert.equal(f.status, 400);
    assert.ok(f.message.includes(says), `${says} in: ${f.message}`);
  });
}

test('a count\'s wait: atLeast with timeoutMs (0 when absent); none without atLeast', () => {
  assert.deepEqual(parseJournalFilter({ atLeast: '3', timeoutMs: '500', status: '201' }, OPS, true), { filter: { status: 201, limit: 100 }, wait: { atLeast: 3, timeoutMs: 500 } });
  assert.deepEqual(parseJournalFilter({ atLeast: '2' }, OPS, true), { filter: { limit: 100 }, wait: { atLeast: 2, timeoutMs: 0 } });
  assert.deepEqual(parseJournalFilter({ key: 'ci' }, OPS, true), { filter: { key: 'ci', limit: 100 }, wait: undefined });
});

test('filters from the router\'s Map and from a plain object read the same; the default limit is 100', () => {
  assert.deepEqual(parseJournalFilter(new Map([['status', ['404']]]), OPS), { status: 404, limit: 100 });
  assert.deepEqual(parseJournalFilter({ status: '404', path: undefined }, OPS), { status: 404, limit: 100 });
});

test('filters: operation, pathPrefix, headers (every one must match, names in any case, values exact)', () => {
  const j = new RequestJournal(100);
  const a = rec({ operation: 'createPet', method: 'POST', headers: ['x-case', 'one', 'x-run', 'r1'] });
  const b = rec({ operation: 'getPet', path: '/v1/pets/1', headers: ['x-case', 'two', 'x-run', 'r1'] });
  const c = rec({ operation: null, path: '/v1/nothing', headers: [] });
  for (const r of [a, b, c]) j.record(r);
  assert.deepEqual(page(j, filter({ operation: 'createPet' })), [a]);
  assert.deepEqual(page(j, filter({ pathPrefix: '/v1/pets' })), [a, b]);
  assert.deepEqual(page(j, filter({ pathPrefix: '/v1/pets/' })), [b]);
  assert.deepEqual(page(j, filter({ header: 'X-Case:one' })), [a]);
  assert.deepEqual(page(j, filter({ header: ['x-run:r1', 'x-case:two'] })), [b]);
  assert.deepEqual(page(j, filter({ header: 'x-run:r1' })), [a, b]);
  assert.deepEqual(page(j, filter({ header: 'x-run:R1' })), [], 'values are exact');
  assert.deepEqual(page(j, filter({ header: 'x-case:' })), [], 'an empty value matches an empty header only');
});

test('several rings as one journal: the newest capacity entries of them all, none older than an evicted one', () => {
  const t = Date.UTC(2026, 0, 1);
  // Worker 1 is busy: its ring of 3 evicted t+1 and t+2; worker 2 is idle and still holds t+0.
  const w1 = new RequestJournal(3);
  const w2 = new RequestJournal(3);
  const old = rec({ at: t });
  w2.record(old);
  const busy = [1, 2, 3, 4, 5].map((i) => rec({ at: t + i }));
  for (const r of busy) w1.record(r);
  const late = rec({ at: t + 6 });
  w2.record(late);
  const bounded = boundRings([w1.ringSlice(ALL), w2.ringSlice(ALL)], 3);
  const merged = mergeSlices(bounded, ALL);
  assert.ok(!(merged instanceof ApiError));
  assert.deepEqual(merged.records, [busy[3], busy[4], late], 'the service keeps its 3 newest; the older one of the idle worker goes first');
  assert.equal(merged.dropped, 4, '2 evicted by worker 1, 1 of its own and the idle worker\'s old one past the bound');
  // With room for more than are held, only what is older than an eviction goes.
  const roomy = mergeSlices(boundRings([w1.ringSlice(ALL), w2.ringSlice(ALL)], 10), ALL);
  assert.ok(!(roomy instanceof ApiError));
  assert.deepEqual(roomy.records, [busy[2], busy[3], busy[4], late]);
  // Filters apply after the bound: a filtered page never shows an entry the whole journal has dropped.
  const onlyOld = mergeSlices(boundRings([w1.ringSlice(ALL), w2.ringSlice({ limit: 1000, path: old.path, status: 200 })], 3), ALL);
  assert.ok(!(onlyOld instanceof ApiError));
  assert.ok(!onlyOld.records.includes(old));
});

test('a wait returns at once when met, is woken by a matching record, and times out with what there is', async () => {
  const j = new RequestJournal(100);
  let now = 0;
  const mono = () => now;
  j.record(rec({ status: 201 }));
  assert.deepEqual(await j.wait(filter({ status: '201' }), 1, 10_000, mono), { count: 1, met: true, waitedMs: 0 });
  assert.deepEqual(await j.wait(filter({ status: '404' }), 1, 0, mono), { count: 0, met: false, waitedMs: 0 }, 'timeoutMs 0 answers at once');
  const waiting = j.wait(filter({ status: '404' }), 2, 60_000, mono);
  j.record(rec({ status: 404 }));
  j.record(rec({ status: 200 }));
  now = 25;
  j.record(rec({ status: 404 }));
  assert.deepEqual(await waiting, { count: 2, met: true, waitedMs: 25 });
  const missed = await j.wait(filter({ status: '500' }), 1, 20, mono);
  assert.ok(!(missed instanceof ApiError));
  assert.deepEqual({ count: missed.count, met: missed.met }, { count: 0, met: false });
});

test('a wait counts exactly: evicted entries do not count, and a stop answers it', async () => {
  const j = new RequestJournal(2);
  const waiting = j.wait(filter({ status: '404' }), 3, 60_000, () => 0);
  for (let i = 0; i < 5; i++) j.record(rec({ status: 404 }));
  j.stop();
  const got = await waiting;
  assert.ok(!(got instanceof ApiError));
  assert.deepEqual({ count: got.count, met: got.met }, { count: 2, met: false }, 'never more than the ring holds');
  assert.deepEqual(await j.wait(filter({ status: '404' }), 5, 60_000, () => 0), { count: 2, met: false, waitedMs: 0 }, 'stopped: no more waits');
});

function exchanged(over: Partial<Exchanged> = {}): Exchanged {
  return {
    requestId: 'r', at: 0, method: 'POST', path: '/v1/pets', rawQuery: '', operation: 'createPet', keyName: 'ci',
    rawHeaders: ['Host', 'x', 'Authorization', 'Bearer secret-key-123', 'X-Tag', 'a', 'x-tag', 'b', 'Content-Type', 'application/json'],
    requestBody: { name: 'Rex', categoryId: 1 }, idempotencyKey: null, status: 201, durationMs: 1,
    responseHeaders: ['X-RateLimit-Limit', '60', 'content-type', 'application/json; charset=utf-8'],
    responseBody: '{"id":1,"name":"Rex","categoryId":1}', responseType: 'application/json; charset=utf-8', ...over,
  };
}

test('what an entry keeps: names in lower case, repeats joined, the key by its name only, the answer', () => {
  const r = recordOf(exchanged());
  assert.deepEqual(r.headers, ['host', 'x', 'authorization', 'Bearer ci', 'x-tag', 'a, b', 'content-type', 'application/json']);
  assert.deepEqual(r.responseHeaders, ['x-ratelimit-limit', '60', 'content-type', 'application/json; charset=utf-8']);
  assert.equal(r.responseJson, '{"id":1,"name":"Rex","categoryId":1}');
  assert.equal(r.bodyJson, '{"name":"Rex","categoryId":1}');
  assert.ok(!JSON.stringify(journalEntry(r)).includes('secret-key-123'));
  const wrong = recordOf(exchanged({ keyName: undefined, rawHeaders: ['Authorization', 'Bearer nope', 'authorization', 'Basic abc'] }));
  assert.deepEqual(wrong.headers, ['authorization', 'Bearer <unknown>'], 'a wrong key, and a second Authorization, show nothing of either');
  assert.equal(recordOf(exchanged({ responseBody: Buffer.from('{"a":1}') })).responseJson, '{"a":1}', 'a cached answer (a Buffer) too');
});

test('what an entry leaves out: bodies over 64 KiB or not JSON, headers past 16 K characters', () => {
  const big = 'é'.repeat(JOURNAL_MAX_BODY_BYTES / 2); // 64 KiB of UTF-8 as text, more as JSON
  assert.equal(recordOf(exchanged({ requestBody: { name: big } })).bodyJson, undefined);
  assert.equal(recordOf(exchanged({ responseBody: JSON.stringify([big]) })).responseJson, undefined);
  assert.equal(recordOf(exchanged({ responseType: 'text/plain' })).responseJson, undefined);
  assert.equal(recordOf(exchanged({ responseHeaders: undefined, responseBody: undefined, status: 0 })).responseHeaders.length, 0);
  const many = Array.from({ length: 40 }, (_, i) => [`x-h${i}`, 'v'.repeat(1000)]).flat();
  const kept = recordOf(exchanged({ rawHeaders: many })).headers;
  assert.ok(kept.length > 0 && kept.length < many.length);
  assert.ok(kept.join('').length <= JOURNAL_MAX_HEADER_CHARS);
  assert.deepEqual(kept.slice(0, 2), ['x-h0', 'v'.repeat(1000)], 'the first ones are kept');
});

test('memory: 100,000 entries cost about what entryBytes says (measured, with --expose-gc only)', { skip: typeof globalThis.gc !== 'function' && 'run node with --expose-gc to measure' }, () => {
  const gc = globalThis.gc as () => void;
  gc();
  const before = process.memoryUsage().heapUsed;
  const j = new RequestJournal(100_000, Infinity);
  // Fresh strings, as node makes for each request it parses (literals would be shared).
  const fresh = (list: string[]): string[] => list.map((v) => Buffer.from(v, 'latin1').toString('latin1'));
  let estimated = 0;
  for (let i = 0; i < 100_000; i++) {
    // A dozen request headers as a client sends them, the answer's dozen, a small body on half.
    const r = recordOf(exchanged({
      requestId: `abcdef12-${i.toString(36)}`, rawQuery: 'limit=20', method: i % 2 === 0 ? 'POST' : 'GET',
      rawHeaders: fresh(['Host', '127.0.0.1:8080', 'User-Agent', 'python-requests/2.31.0', 'Accept-Encoding', 'gzip, deflate', 'Accept', '*/*',
        'Connection', 'keep-alive', 'Authorization', 'Bearer k', 'Content-Type', 'application/json', 'Content-Length', '30',
        'X-Request-Source', 'checkout', 'Traceparent', `00-${i.toString(16).padStart(32, '0')}-00f067aa0ba902b7-01`]),
      requestBody: i % 2 === 0 ? { name: 'Rex', categoryId: 1 } : undefined,
      responseHeaders: fresh(['X-RateLimit-Limit', '300', 'X-RateLimit-Remaining', '299', 'X-RateLimit-Reset', '1795855511',
        'RateLimit-Policy', '"minute";q=300;w=60, "day";q=10000;w=86400', 'RateLimit', '"minute";r=299;t=1', 'location', `http://127.0.0.1:8080/v1/pets/${i}`,
        'x-request-id', `694b20fd-${i}`, 'content-type', 'application/json; charset=utf-8', 'content-length', '35', 'cache-control', 'no-store']),
      responseBody: `{"id":${i},"name":"Rex","categoryId":1}`,
    }));
    estimated += entryBytes(r);
    j.record(r);
  }
  gc();
  const used = process.memoryUsage().heapUsed - before;
  console.log(`journal: ${(used / 100_000).toFixed(0)} bytes per entry measured, ${(estimated / 100_000).toFixed(0)} estimated (overhead ${ENTRY_OVERHEAD_BYTES})`);
  assert.ok(used < estimated * 1.5, `measured ${used} vs estimated ${estimated}`);
  assert.equal(j.size, 100_000);
});
