// CORS (Fetch standard): the response headers for an allowed Origin, and a preflight's answer.
import type { Config } from '../config/index.js';
import { RATE_LIMIT_HEADERS } from '../limits/index.js';
import type { Exchange } from './exchange.js';

const EXPOSED = [...RATE_LIMIT_HEADERS, 'Retry-After', 'Link', 'Location', 'Deprecation', 'Sunset', 'X-Request-Id', 'WWW-Authenticate', 'Idempotent-Replayed'].join(', ');

/** Adds the CORS response headers when the request's Origin is allowed; false otherwise. */
export function allowCors(x: Exchange, config: Config): boolean {
  const origin = x.req.headers.origin;
  if (origin === undefined) return false;
  const any = config.cors.origins.includes('*');
  if (!any && !config.cors.origins.includes(origin)) return false;
  x.headers['access-control-allow-origin'] = any ? '*' : origin;
  if (!any) x.headers.vary = 'Origin';
  x.headers['access-control-expose-headers'] = EXPOSED;
  return true;
}

/** The headers of a preflight's 204 for a path allowing `allow`. */
export function addPreflightHeaders(x: Exchange, allow: string): void {
  x.headers['access-control-allow-methods'] = allow;
  x.headers['access-control-allow-headers'] = 'Authorization, Content-Type, Idempotency-Key, X-Request-Id';
  x.headers['access-control-max-age'] = '600';
}
