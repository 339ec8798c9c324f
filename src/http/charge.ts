// Charging a request to the limiter: the keyless per-address budget, and a refusal turned
// into the response (429 rate_limited or temporarily_banned, counted for metrics).
import type { Config } from '../config/index.js';
import { ApiError, type ErrorCode } from '../core/index.js';
import type { LimitResult } from '../limits/index.js';
import { clientAddress } from './client-address.js';
import type { AppDeps, Exchange, Instance } from './exchange.js';

/** Charges a request to its client address's keyless budget (`anonymous`). */
export function chargeAddress(deps: AppDeps, x: Exchange, config: Config): LimitResult | Promise<LimitResult> {
  return deps.addressLimiter.take(clientAddress(x.req, config), config.anonymous, x.started);
}

/** Keeps the limiter's answer for the headers (send.ts writes them); a refusal becomes the response. */
export function applyLimit(app: Instance, x: Exchange, limit: LimitResult): void {
  x.limit = limit;
  if (limit.outcome === 'ok') return;
  app.metrics?.refused(limit.outcome);
  const message = limit.outcome === 'temporarily_banned'
    ? `Too many requests after 429 responses: temporarily banned; retry after ${limit.retryAfter} s.`
    : `Rate limit exceeded; retry after ${limit.retryAfter} s.`;
  throw new ApiError(limit.outcome satisfies ErrorCode, message);
}
