// Query strings, parsed by hand: no URL object per request, and every repeated or
// badly encoded parameter is reported instead of being silently resolved.
import type { Query } from '../api/index.js';
import { ApiError } from '../core/index.js';

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

function decode(part: string): string {
  if (!part.includes('%') && !part.includes('+')) return part;
  try {
    return decodeURIComponent(part.replaceAll('+', ' '));
  } catch {
    throw new ApiError('invalid_request', 'The query string has an invalid percent-encoding.');
  }
}
