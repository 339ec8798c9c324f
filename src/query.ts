// Query strings, parsed by hand: no URL object per request, and every repeated or
// badly encoded parameter is reported instead of being silently resolved.
import { ApiError } from './core/errors.js';

export type Query = ReadonlyMap<string, readonly string[]>;

const EMPTY: Query = new Map();

/** Parse `a=1&b=2` (without the `?`). `+` is a space, per application/x-www-form-urlencoded. */
export function parseQuery(raw: string): Query {
  if (raw === '') return EMPTY;
  const out = new Map<string, string[]>();
  for (const pair of raw.split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const name = decode(eq === -1 ? pair : pair.slice(0, eq));
    const value = eq === -1 ? '' : decode(pair.slice(eq + 1));
    const list = out.get(name);
    if (list) list.push(value);
    else out.set(name, [value]);
  }
  return out;
}

/** The one value of `name`, or undefined; given twice is an error (returned, see schemas.ts). */
export function single(query: Query, name: string): string | undefined | ApiError {
  const values = query.get(name);
  if (values === undefined) return undefined;
  if (values.length > 1) return new ApiError('invalid_request', `Query parameter ${name} must be given at most once.`);
  return values[0];
}

function decode(part: string): string {
  if (!part.includes('%') && !part.includes('+')) return part;
  try {
    return decodeURIComponent(part.replaceAll('+', ' '));
  } catch {
    throw new ApiError('invalid_request', 'The query string has an invalid percent-encoding.');
  }
}
