// The metrics registry, its text exposition and the merge of several processes' snapshots.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { checkWithPromtool, noPromtool } from '../support/promtool.js';
import { ServiceMetrics, escapeLabelValue, mergeSnapshots, render, type MetricsSnapshot } from '../../src/metrics/index.js';

function metrics(): ServiceMetrics {
  const m = new ServiceMetrics({ operations: ['listPets', 'createPet'], version: '1.2.3' });
  return m;
}

/** The value of one sample line (name and labels exactly as written), or undefined. */
function valueOf(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('registry and exposition', () => {
  test('requests are counted by operation and status; an unknown operation is "unknown"', () => {
    const m = metrics();
    try {
      m.request('listPets', 200, 0.3);
      m.request('listPets', 200, 0.4);
      m.request('listPets', 400, 0.1);
      m.request(undefined, 404, 0.1);
      m.request('notAnOperation', 401, 0.1);
      const text = render(m.snapshot());
      assert.equal(valueOf(text, 'petstore_http_requests_total{operation="listPets",status="200"}'), 2);
      assert.equal(valueOf(text, 'petstore_http_requests_total{operation="listPets",status="400"}'), 1);
      assert.equal(valueOf(text, 'petstore_http_requests_total{operation="unknown",status="404"}'), 1);
      assert.equal(valueOf(text, 'petstore_http_requests_total{operation="unknown",status="401"}'), 1);
      assert.equal(valueOf(text, 'petstore_http_requests_total{operation="createPet",status="201"}'), undefined, 'no series for what never happened');
    } finally {
      m.close();
    }
  });

  test('a duration histogram is cumulative, ends in +Inf, and its count and sum match', () => {
    const m = metrics();
    try {
      for (const ms of [0.05, 0.3, 0.3, 2, 40, 20_000]) m.request('createPet', 201, ms);
      const text = render(m.snapshot());
      const b = (le: string): number | undefined => valueOf(text, `petstore_http_request_duration_seconds_bucket{operation="createPet",le="${le}"}`);
      assert.equal(b('0.0001'), 1);
      assert.equal(b('0.0005'), 3);
      assert.equal(b('0.0025'), 4);
      assert.equal(b('0.05'), 5);
      assert.equal(b('10'), 5);
      assert.equal(b('+Inf'), 6);
      assert.equal(valueOf(text, 'petstore_http_request_duration_seconds_count{operation="createPet"}'), 6);
      const sum = valueOf(text, 'petstore_http_request_duration_seconds_sum{operation="createPet"}') ?? NaN;
      assert.ok(Math.abs(sum - 20.04265) < 1e-9, `sum ${sum}`);
    } finally {
      m.close();
    }
  });

  test('every family has # HELP and # TYPE before its samples', () => {
    const m = metrics();
    try {
      m.request('listPets', 200, 1);
      m.refused('rate_limited');
      m.unauthorized('invalid_key');
      m.store.batchWritten(3, 0.002);
      m.store.journalBytes(1234);
      m.store.compacted(true);
      m.petsStored = () => 7;
      const text = render(m.snapshot());
      const helped = new Set<string>();
      const typed = new Map<string, string>();
      for (const line of text.split('\n')) {
        if (line === '') continue;
        const help = /^# HELP (\S+) \S/.exec(line);
        const type = /^# TYPE (\S+) (counter|gauge|histogram)$/.exec(line);
        if (help) helped.add(help[1] as string);
        else if (type) typed.set(type[1] as string, type[2] as string);
        else {
          const name = /^([a-zA-Z_:][a-zA-Z0-9_:]*)/.exec(line)?.[1] ?? '';
          const family = typed.get(name) === undefined ? name.replace(/_(bucket|sum|count)$/, '') : name;
          assert.ok(helped.has(family) && typed.has(family), `sample before its HELP and TYPE: ${line}`);
          assert.match(line, /^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\})? \S+$/);
        }
      }
      for (const name of ['petstore_store_pets', 'petstore_store_journal_bytes', 'petstore_store_write_duration_seconds', 'petstore_store_batch_size',
        'petstore_store_compactions_total', 'petstore_rate_limit_refusals_total', 'petstore_unauthorized_total', 'process_resident_memory_bytes',
        'process_cpu_seconds_total', 'process_start_time_seconds', 'nodejs_eventloop_lag_p99_seconds']) {
        assert.ok(typed.has(name), `${name} is exposed`);
      }
      assert.equal(valueOf(text, 'petstore_store_pets'), 7);
      assert.equal(valueOf(text, 'petstore_store_journal_bytes'), 1234);
      assert.equal(valueOf(text, 'petstore_store_batch_size_bucket{le="5"}'), 1);
      assert.equal(valueOf(text, 'petstore_store_batch_size_bucket{le="2"}'), 0);
      assert.equal(valueOf(text, 'petstore_store_compactions_total{result="ok"}'), 1);
      assert.equal(valueOf(text, 'petstore_rate_limit_refusals_total{reason="rate_limited"}'), 1);
      assert.equal(valueOf(text, 'petstore_rate_limit_refusals_total{reason="temporarily_banned"}'), 0);
      assert.equal(valueOf(text, 'petstore_unauthorized_total{reason="invalid_key"}'), 1);
    } finally {
      m.close();
    }
  });

  test('without store figures, the store families are left out', () => {
    const m = metrics();
    try {
      const text = render(m.snapshot());
      assert.doesNotMatch(text, /petstore_store_/);
    } finally {
      m.close();
    }
  });

  test('label values are escaped: backslash, double quote, line feed', () => {
    assert.equal(escapeLabelValue('a\\b"c\nd'), 'a\\\\b\\"c\\nd');
    const snap: MetricsSnapshot = {
      families: [{ name: 'x_total', help: 'help with \\ and\nnewline', type: 'counter', samples: [{ labels: { v: 'say "hi"\n\\' }, value: 1 }] }],
    };
    assert.equal(render(snap), '# HELP x_total help with \\\\ and\\nnewline\n# TYPE x_total counter\nx_total{v="say \\"hi\\"\\n\\\\"} 1\n');
  });

  test('promtool check metrics accepts the exposition', { skip: noPromtool }, () => {
    const m = metrics();
    try {
      m.request('listPets', 200, 1);
      m.store.batchWritten(3, 0.002);
      m.store.journalBytes(10);
      const r = checkWithPromtool(render(m.snapshot()));
      assert.equal(r.status, 0, r.output);
      assert.equal(r.output.trim(), '', 'no lint problem either');
      const bad = checkWithPromtool('# TYPE x counter\nx{a="unterminated} 1\n');
      assert.notEqual(bad.status, 0, 'the check can fail');
    } finally {
      m.close();
    }
  });
});

describe('merging the snapshots of several workers', () => {
  test('counters and histograms add up; gauges follow their rule', () => {
    const a = metrics();
    const b = metrics();
    try {
      a.request('listPets', 200, 0.2);
      a.request('listPets', 200, 0.2);
      b.request('listPets', 200, 3);
      b.request('createPet', 201, 3);
      a.refused('temporarily_banned');
      b.refused('temporarily_banned');
      a.petsStored = () => 10;
      b.petsStored = () => 12;
      const sa = a.snapshot();
      const sb = b.snapshot();
      const text = render(mergeSnapshots([sa, sb]));
      assert.equal(valueOf(text, 'petstore_http_requests_total{operation="listPets",status="200"}'), 3);
      assert.equal(valueOf(text, 'petstore_http_requests_total{operation="createPet",status="201"}'), 1);
      assert.equal(valueOf(text, 'petstore_http_request_duration_seconds_bucket{operation="listPets",le="0.00025"}'), 2);
      assert.equal(valueOf(text, 'petstore_http_request_duration_seconds_bucket{operation="listPets",le="+Inf"}'), 3);
      assert.equal(valueOf(text, 'petstore_http_request_duration_seconds_count{operation="listPets"}'), 3);
      assert.equal(valueOf(text, 'petstore_rate_limit_refusals_total{reason="temporarily_banned"}'), 2);
      assert.equal(valueOf(text, 'petstore_store_pets'), 12, 'a shared store: the largest figure, not the sum');
      const rss = (s: MetricsSnapshot): number => {
        const f = s.families.find((x) => x.name === 'process_resident_memory_bytes');
        return f !== undefined && f.type !== 'histogram' ? (f.samples[0]?.value ?? NaN) : NaN;
      };
      assert.equal(valueOf(text, 'process_resident_memory_bytes'), rss(sa) + rss(sb), 'memory of the whole service');
      const start = (s: MetricsSnapshot): number => {
        const f = s.families.find((x) => x.name === 'process_start_time_seconds');
        return f !== undefined && f.type !== 'histogram' ? (f.samples[0]?.value ?? NaN) : NaN;
      };
      assert.equal(valueOf(text, 'process_start_time_seconds'), Math.min(start(sa), start(sb)));
      assert.equal(text.split('\n').filter((l) => l === '# TYPE petstore_http_requests_total counter').length, 1, 'one family, not one per worker');
      assert.deepEqual(JSON.parse(JSON.stringify(sa)), sa, 'a snapshot is plain data a worker can send to its parent');
    } finally {
      a.close();
      b.close();
    }
  });

  test('a family of another type or other buckets is refused, not mixed', () => {
    const counter: MetricsSnapshot = { families: [{ name: 'x', help: 'h', type: 'counter', samples: [] }] };
    const gauge: MetricsSnapshot = { families: [{ name: 'x', help: 'h', type: 'gauge', merge: 'sum', samples: [] }] };
    assert.throws(() => mergeSnapshots([counter, gauge]), /counter in one snapshot and a gauge/);
    const h1: MetricsSnapshot = { families: [{ name: 'h', help: 'h', type: 'histogram', bounds: [1, 2], samples: [] }] };
    const h2: MetricsSnapshot = { families: [{ name: 'h', help: 'h', type: 'histogram', bounds: [1, 3], samples: [] }] };
    assert.throws(() => mergeSnapshots([h1, h2]), /other buckets/);
  });
});
