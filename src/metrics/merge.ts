// Several workers, one scrape: the parent merges its workers' snapshots. Counters and
// histograms are summed (the service answered that many requests in all), gauges by their own
// rule (memory and descriptors summed, start time the earliest, lag and pets the largest). No
// per-worker label: a scrape sees the whole service, as one process would show it.
import type { Family, HistogramSample, MetricsSnapshot, Sample } from './contract.js';

function labelKey(labels: Readonly<Record<string, string>>): string {
  return JSON.stringify(Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

export function mergeSnapshots(snapshots: readonly MetricsSnapshot[]): MetricsSnapshot {
  const merged = new Map<string, Family>();
  for (const snap of snapshots) {
    for (const f of snap.families) {
      const seen = merged.get(f.name);
      merged.set(f.name, seen === undefined ? f : mergeFamily(seen, f));
    }
  }
  return { families: [...merged.values()] };
}

function mergeFamily(a: Family, b: Family): Family {
  if (a.type !== b.type) throw new Error(`metric ${a.name} is a ${a.type} in one snapshot and a ${b.type} in another`);
  if (a.type === 'histogram' && b.type === 'histogram') {
    if (a.bounds.join() !== b.bounds.join()) throw new Error(`histogram ${a.name} has other buckets in another snapshot`);
    const byKey = new Map<string, HistogramSample>();
    for (const s of [...a.samples, ...b.samples]) {
      const k = labelKey(s.labels);
      const prev = byKey.get(k);
      byKey.set(k, prev === undefined ? s : { labels: s.labels, counts: s.counts.map((c, i) => c + (prev.counts[i] ?? 0)), sum: s.sum + prev.sum });
    }
    return { ...a, samples: [...byKey.values()] };
  }
  const rule = a.type === 'gauge' ? a.merge : 'sum';
  const combine = rule === 'sum' ? (x: number, y: number) => x + y : rule === 'max' ? Math.max : Math.min;
  const byKey = new Map<string, Sample>();
  for (const s of [...(a.samples as readonly Sample[]), ...(b.samples as readonly Sample[])]) {
    const k = labelKey(s.labels);
    const prev = byKey.get(k);
    byKey.set(k, prev === undefined ? s : { labels: s.labels, value: combine(prev.value, s.value) });
  }
  return { ...a, samples: [...byKey.values()] } as Family;
}
