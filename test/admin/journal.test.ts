// The request journal as a data structure: the ring, its bounds, filters, since, merging.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError } from '../../src/core/index.js';
import {
  ENTRY_OVERHEAD_BYTES, RequestJournal, countSlices, entryBytes, journalEntry, journalPageJson, mergeSlices, parseJournalFilter, queryObject,
  type JournalFilter, type JournalRecord,
} from '../../src/admin/journal.js';

let n = 0;
function rec(over: Partial<JournalRecord> = {}): JournalRecord {
  n++;
  return {
    requestId: `r${n}`, at: Date.UTC(2026, 0, 1) + n, method: 'GET', path: '/v1/pets', rawQuery: '', key: 'demo', status: 200,
    durationMs: 1.5, idempotencyKey: null, bodyJson: undefined, ...over,
  };
}
const ALL: JournalFilter = { limit: 1000 };

function filter(q: Record<string, string | string[]>): JournalFilter {
  const f = parseJournalFilter(q);
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
  assert.deepEqual({ ...entry, query: { ...entry.query } }, {
    requestId: r.requestId, time: '2026-05-06T07:08:09.010Z', method: 'POST', path: '/v1/pets',
    query: { limit: '5', status: ['sold', 'pending'], q: 'a b' }, key: null, status: 201, durationMs: 1.5,
    idempotencyKey: 'k-1', body: { name: 'Rex', categoryId: 1 },
  });
  assert.equal(journalEntry(rec()).body, null);
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
];
for (const [name, q, says] of BAD_FILTERS) {
  test(`a bad filter is a 400 naming it: ${name}`, () => {
    const f = parseJournalFilter(q);
    assert.ok(f instanceof ApiError);
    assert.equal(f.status, 400);
    assert.ok(f.message.includes(says), `${says} in: ${f.message}`);
  });
}

test('filters from the router\'s Map and from a plain object read the same; the default limit is 100', () => {
  assert.deepEqual(parseJournalFilter(new Map([['status', ['404']]])), { status: 404, limit: 100 });
  assert.deepEqual(parseJournalFilter({ status: '404', path: undefined }), { status: 404, limit: 100 });
});

test('memory: 100,000 entries cost about what entryBytes says (measured, with --expose-gc only)', { skip: typeof globalThis.gc !== 'function' && 'run node with --expose-gc to measure' }, () => {
  const gc = globalThis.gc as () => void;
  gc();
  const before = process.memoryUsage().heapUsed;
  const j = new RequestJournal(100_000);
  let estimated = 0;
  for (let i = 0; i < 100_000; i++) {
    const r = rec({ requestId: `abcdef12-${i.toString(36)}`, rawQuery: 'limit=20', bodyJson: i % 2 === 0 ? '{"name":"Rex","categoryId":1}' : undefined });
    estimated += entryBytes(r);
    j.record(r);
  }
  gc();
  const used = process.memoryUsage().heapUsed - before;
  console.log(`journal: ${(used / 100_000).toFixed(0)} bytes per entry measured, ${(estimated / 100_000).toFixed(0)} estimated (overhead ${ENTRY_OVERHEAD_BYTES})`);
  assert.ok(used < estimated * 1.5, `measured ${used} vs estimated ${estimated}`);
  assert.equal(j.size, 100_000);
});
