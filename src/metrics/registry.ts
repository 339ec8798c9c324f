// The service's figures: requests by operation and status, their durations, rate-limit
// refusals and 401s, and the store's writes; sampled ones (pets stored, the process) are read
// at scrape time. Recording is a few increments on arrays made at start: nothing per request
// is allocated, so a service with metrics on answers as fast as one without.
import type { Family, HistogramSample, MetricsRecorder, MetricsSnapshot, RefusalReason, Sample, UnauthorizedReason } from './contract.js';
import { BATCH_BOUNDS, DURATION_BOUNDS, Histogram } from './histogram.js';
import { ProcessSampler } from './process.js';

/** Requests that matched no operation (unknown paths, and those refused before routing). */
export const UNKNOWN_OPERATION = 'unknown';
/** Statuses are counted in an array indexed by status code. */
const STATUS_SLOTS = 600;

interface OperationStats {
  readonly byStatus: Float64Array;
  readonly duration: Histogram;
}

export interface MetricsOptions {
  /** Every operation the service answers (operationIds); anything else is counted as unknown. */
  readonly operations: readonly string[];
  readonly version: string;
  /** Pets stored, read at scrape time; undefined (or answering undefined): not known in this process. */
  readonly petsStored?: () => number | undefined;
}

/** The store's side (StoreObserver of the file store): batches, journal size, compactions. */
export interface StoreFigures {
  batchWritten(size: number, seconds: number): void;
  journalBytes(bytes: number): void;
  compacted(ok: boolean): void;
}

export class ServiceMetrics implements MetricsRecorder {
  readonly #ops = new Map<string, OperationStats>();
  readonly #unknown: OperationStats;
  readonly #refusals = { rate_limited: 0, temporarily_banned: 0 };
  readonly #unauthorized = { missing_key: 0, invalid_key: 0, other_scheme: 0 };
  readonly #writes = new Histogram(DURATION_BOUNDS);
  readonly #batches = new Histogram(BATCH_BOUNDS);
  #journalBytes: number | undefined;
  readonly #compactions = { ok: 0, failed: 0 };
  readonly #version: string;
  #petsStored: (() => number | undefined) | undefined;
  readonly #process = new ProcessSampler();

  /** The file store's observer: set as FileStoreOptions.observer. */
  readonly store: StoreFigures = {
    batchWritten: (size, seconds) => {
      this.#batches.observe(size);
      this.#writes.observe(seconds);
    },
    journalBytes: (bytes) => {
      this.#journalBytes = bytes;
    },
    compacted: (ok) => {
      this.#compactions[ok ? 'ok' : 'failed']++;
    },
  };

  constructor(opts: MetricsOptions) {
    for (const op of opts.operations) this.#ops.set(op, newStats());
    this.#unknown = this.#ops.get(UNKNOWN_OPERATION) ?? newStats();
    this.#ops.set(UNKNOWN_OPERATION, this.#unknown);
    this.#version = opts.version;
    this.#petsStored = opts.petsStored;
  }

  /** Where the pets-stored gauge reads from (the store is opened after the metrics). */
  set petsStored(read: (() => number | undefined) | undefined) {
    this.#petsStored = read;
  }

  request(operation: string | undefined, status: number, ms: number): void {
    const stats = (operation === undefined ? undefined : this.#ops.get(operation)) ?? this.#unknown;
    const slot = status < STATUS_SLOTS ? status : 0;
    stats.byStatus[slot] = (stats.byStatus[slot] as number) + 1;
    stats.duration.observe(ms / 1000);
  }

  refused(reason: RefusalReason): void {
    this.#refusals[reason]++;
  }

  unauthorized(reason: UnauthorizedReason): void {
    this.#unauthorized[reason]++;
  }

  /** Stops the event-loop delay monitor. */
  close(): void {
    this.#process.close();
  }

  snapshot(): MetricsSnapshot {
    const requests: Sample[] = [];
    const durations: HistogramSample[] = [];
    for (const [operation, stats] of this.#ops) {
      stats.byStatus.forEach((n, status) => {
        if (n > 0) requests.push({ labels: { operation, status: String(status) }, value: n });
      });
      if (stats.duration.count > 0) durations.push(histogramSample({ operation }, stats.duration));
    }
    const families: Family[] = [
      { name: 'petstore_build_info', help: 'Always 1; the version of the service as a label.', type: 'gauge', merge: 'max', samples: [{ labels: { version: this.#version }, value: 1 }] },
      { name: 'petstore_http_requests_total', help: 'Requests answered, by operation (operationId, or unknown) and HTTP status.', type: 'counter', samples: requests },
      { name: 'petstore_http_request_duration_seconds', help: 'Time from the request being read to the response being handed to the socket, by operation.', type: 'histogram', bounds: DURATION_BOUNDS, samples: durations },
      { name: 'petstore_rate_limit_refusals_total', help: 'Requests refused with 429, by reason (rate_limited: a bucket was empty; temporarily_banned: kept sending after 429s).', type: 'counter', samples: labelled('reason', this.#refusals) },
      { name: 'petstore_unauthorized_total', help: 'Requests answered 401, by reason (missing_key, invalid_key, other_scheme).', type: 'counter', samples: labelled('reason', this.#unauthorized) },
    ];
    const pets = this.#petsStored?.();
    if (pets !== undefined) families.push({ name: 'petstore_store_pets', help: 'Pets stored.', type: 'gauge', merge: 'max', samples: [{ labels: {}, value: pets }] });
    if (this.#journalBytes !== undefined) {
      families.push(
        { name: 'petstore_store_write_duration_seconds', help: 'Time of one durable store write (a batch of creates sharing one journal append and sync).', type: 'histogram', bounds: DURATION_BOUNDS, samples: [histogramSample({}, this.#writes)] },
        { name: 'petstore_store_batch_size', help: 'Operations (creates, seeds, resets) per durable store write.', type: 'histogram', bounds: BATCH_BOUNDS, samples: [histogramSample({}, this.#batches)] },
        { name: 'petstore_store_journal_bytes', help: 'Bytes in the data file\'s journal (and its rotated part) since the last snapshot.', type: 'gauge', merge: 'max', samples: [{ labels: {}, value: this.#journalBytes }] },
        { name: 'petstore_store_compactions_total', help: 'Compactions of the journal into the snapshot, by result (ok, failed).', type: 'counter', samples: labelled('result', this.#compactions) },
      );
    }
    families.push(...this.#process.families());
    return { families };
  }
}

function newStats(): OperationStats {
  return { byStatus: new Float64Array(STATUS_SLOTS), duration: new Histogram(DURATION_BOUNDS) };
}

function histogramSample(labels: Record<string, string>, h: Histogram): HistogramSample {
  return { labels, counts: Array.from(h.counts), sum: h.sum };
}

function labelled(name: string, counts: Readonly<Record<string, number>>): Sample[] {
  return Object.entries(counts).map(([value, n]) => ({ labels: { [name]: value }, value: n }));
}
