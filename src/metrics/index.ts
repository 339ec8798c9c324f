// The metrics' face: the recorder contract, the service's registry, the text exposition and
// the merge of several processes' snapshots.
export type { Family, HistogramSample, Labels, MergeRule, MetricsRecorder, MetricsSnapshot, RefusalReason, Sample, UnauthorizedReason } from './contract.js';
export { ServiceMetrics, UNKNOWN_OPERATION } from './registry.js';
export type { MetricsOptions, StoreFigures } from './registry.js';
export { EXPOSITION_CONTENT_TYPE, escapeLabelValue, render } from './exposition.js';
export { mergeSnapshots } from './merge.js';
export { SCRAPE_MAX_AGE_MS, ScrapeCache, cachedScrape, isSnapshot } from './scrape-cache.js';
export type { ScrapeCacheOptions } from './scrape-cache.js';
