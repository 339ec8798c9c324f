// Bounds that more than one part must agree on: the config refuses what the limiter or the
// store could not honour, so the number lives here once.

/**
 * Largest perMinute or perDay a config (or a saved limiter state) may give. The token
 * arithmetic of the limiter is exact while capacity * windowMs < 2^53 (perDay up to about
 * 10^8); beyond, a double's rounding is about capacity / 2^52 of a token per step, under
 * 1/4000 of a token at 10^12 (the "unlimited" plans of the bench and the soak). Much further,
 * taking a token could round to taking nothing, and the bucket would never refuse.
 */
export const MAX_LIMIT = 1_000_000_000_000;
/** Longest ban a config (or a saved limiter state) may give: one year. */
export const MAX_BAN_SECONDS = 31_536_000;
/** Creates that may wait for the data file's batch in flight, unless the config says otherwise. */
export const DEFAULT_MAX_QUEUED_WRITES = 10_000;
/** How long an Idempotency-Key is remembered, unless the config says otherwise (the draft's 24 hours). */
export const DEFAULT_IDEMPOTENCY_RETENTION_HOURS = 24;
/** Longest retention a config may give: a year. */
export const MAX_IDEMPOTENCY_RETENTION_HOURS = 8760;
/** Most processes --workers may start: well past any core count this service is run on. */
export const MAX_WORKERS = 64;
