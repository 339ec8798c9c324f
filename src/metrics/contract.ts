// The metrics contract: what the service records (MetricsRecorder, for the HTTP layer) and a
// scrape's figures as plain data (MetricsSnapshot), apart from their text exposition. A
// snapshot is JSON-safe and says how each family combines across processes, so that a parent
// of several workers can merge its workers' snapshots into one scrape (see merge.ts).

export type Labels = Readonly<Record<string, string>>;

/**
 * How a parent with several workers combines one family across them: counters and histograms
 * add up; a gauge says whether its figures add up (memory), or the largest (a lag, pets in a
 * shared store) or smallest (a start time) stands for the whole service.
 */
export type MergeRule = 'sum' | 'max' | 'min';

export interface Sample {
  readonly labels: Labels;
  readonly value: number;
}

export interface HistogramSample {
  readonly labels: Labels;
  /** Observations per bucket, NOT cumulative: counts[i] for bounds[i-1] < v <= bounds[i]; the last is above every bound. */
  readonly counts: readonly number[];
  readonly sum: number;
}

interface FamilyHead {
  /** The full metric name (a counter's ends in _total). */
  readonly name: string;
  readonly help: string;
}

export type Family =
  | (FamilyHead & { readonly type: 'counter'; readonly samples: readonly Sample[] })
  | (FamilyHead & { readonly type: 'gauge'; readonly merge: MergeRule; readonly samples: readonly Sample[] })
  | (FamilyHead & { readonly type: 'histogram'; readonly bounds: readonly number[]; readonly samples: readonly HistogramSample[] });

/** One scrape's figures, in exposition order. */
export interface MetricsSnapshot {
  readonly families: readonly Family[];
}

export type RefusalReason = 'rate_limited' | 'temporarily_banned';
export type UnauthorizedReason = 'missing_key' | 'invalid_key' | 'other_scheme';

/** What the HTTP layer records; each call is a few array increments, no allocation. */
export interface MetricsRecorder {
  /** One answered request: its operation (undefined: no route), status and duration in ms. */
  request(operation: string | undefined, status: number, ms: number): void;
  refused(reason: RefusalReason): void;
  unauthorized(reason: UnauthorizedReason): void;
  /** The scrape: every family, as data. */
  snapshot(): MetricsSnapshot;
}
