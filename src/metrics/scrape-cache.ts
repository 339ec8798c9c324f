// The scrape's text, made at most once per short window and shared: a flood of scrapes costs
// one gather of the figures (with workers, one snapshot from every worker over IPC, merged and
// rendered) per window, and every other scrape in that window is answered the same text, a
// string already made. Concurrent scrapes share the gather under way. The figures are then at
// most SCRAPE_MAX_AGE_MS old, far below any scrape interval Prometheus is given.
import type { MetricsRecorder, MetricsSnapshot } from './contract.js';
import { render } from './exposition.js';
import { mergeSnapshots } from './merge.js';

/** How long one gathered scrape serves the others. */
export const SCRAPE_MAX_AGE_MS = 1_000;

export interface ScrapeCacheOptions {
  /** Makes the text: the expensive part. */
  readonly gather: () => string | Promise<string>;
  readonly maxAgeMs?: number;
  /** A monotonic clock in ms (performance.now); injected by tests. */
  readonly now?: () => number;
}

export class ScrapeCache {
  readonly #gather: () => string | Promise<string>;
  readonly #maxAgeMs: number;
  readonly #now: () => number;
  #text: string | undefined;
  #at = 0;
  #pending: Promise<string> | undefined;
  /** Gathers made so far (the others were served from the cache or a shared gather). */
  gathers = 0;

  constructor(opts: ScrapeCacheOptions) {
    this.#gather = opts.gather;
    this.#maxAgeMs = opts.maxAgeMs ?? SCRAPE_MAX_AGE_MS;
    this.#now = opts.now ?? (() => performance.now());
  }

  /** The text: the cached string while fresh, else the gather under way, else a new one. */
  text(): string | Promise<string> {
    if (this.#text !== undefined && this.#now() - this.#at < this.#maxAgeMs) return this.#text;
    if (this.#pending !== undefined) return this.#pending;
    // Aged from the start of its gather: the figures are never older than the window says.
    const at = this.#now();
    this.gathers++;
    const made = this.#gather();
    if (typeof made === 'string') return this.#keep(made, at);
    this.#pending = made.then(
      (text) => {
        this.#pending = undefined;
        return this.#keep(text, at);
      },
      (err: unknown) => {
        this.#pending = undefined;
        throw err;
      },
    );
    return this.#pending;
  }

  #keep(text: string, at: number): string {
    this.#text = text;
    this.#at = at;
    return text;
  }
}

/**
 * The one function the HTTP layer calls for GET /metrics. Alone: this process's figures.
 * With workers, `gatherAll` returns every worker's snapshot (this one's included), itself
 * shared by all workers for the same window (the primary keeps the last gather).
 */
export function cachedScrape(recorder: MetricsRecorder, gatherAll?: () => Promise<readonly unknown[]>, opts: Omit<ScrapeCacheOptions, 'gather'> = {}): () => string | Promise<string> {
  const gather = gatherAll === undefined
    ? () => render(recorder.snapshot())
    : async () => {
      const all = (await gatherAll()).filter(isSnapshot);
      // Alone for a moment (the primary gone, or every peer busy starting): this one's figures.
      return render(all.length === 0 ? recorder.snapshot() : mergeSnapshots(all));
    };
  const cache = new ScrapeCache({ ...opts, gather });
  return () => cache.text();
}

/** A worker's answer to a scrape: a snapshot (a worker without metrics answers nothing). */
export function isSnapshot(v: unknown): v is MetricsSnapshot {
  return typeof v === 'object' && v !== null && Array.isArray((v as { families?: unknown }).families);
}
