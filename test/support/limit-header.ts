// A rate-limit header as the app writes it, for the limiter tests: through writeLimitHeaders,
// the one mapping from a limiter's result to header fields.
import { writeLimitHeaders, type LimitResult } from '../../src/limits/index.js';

/** The value of header `name` that an answer charged with `r` carries, or undefined. */
export function header(r: LimitResult, name: string): string | undefined {
  const fields: string[] = [];
  writeLimitHeaders(fields, 0, r);
  const at = fields.indexOf(name);
  return at >= 0 && at % 2 === 0 ? fields[at + 1] : undefined;
}
