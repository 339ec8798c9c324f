// The headers of a deprecated operation (RFC 9745 Deprecation, RFC 8594 Sunset, RFC 8288 Link
// to its successor), on every one of its responses, errors included: built once per base URL.
import type { Instance } from './exchange.js';
import { baseOf, type Phase } from './phase.js';
import type { TableRoute } from './route-table.js';

// Deprecated since release 1.0.0 of this service (1 January 2026), per RFC 9745.
const DEPRECATION = `@${Date.UTC(2026, 0, 1) / 1000}`;

/**
 * The phase of `route` (deprecated): its three headers under the request's base URL, as
 * [name, value, ...], built on first use. The list of the route's last base URL is kept in the
 * phase itself (it depends on nothing else): a client keeps its Host, so most requests find it
 * with one comparison (of the very string app.bases keeps).
 */
export function deprecationPhase(route: TableRoute): Phase {
  const { successor, sunset } = route.deprecated as NonNullable<TableRoute['deprecated']>;
  let lastBase: string | undefined;
  let lastHeaders: readonly string[] = [];
  return (app, x) => {
    const baseUrl = baseOf(app, x);
    if (baseUrl !== lastBase) {
      lastHeaders = deprecationHeaders(app, successor, sunset, baseUrl);
      lastBase = baseUrl;
    }
    x.deprecated = lastHeaders;
    return undefined;
  };
}

function deprecationHeaders(app: Instance, successor: string, sunset: string, baseUrl: string): readonly string[] {
  const key = baseUrl + successor;
  let headers = app.deprecations.get(key);
  if (headers === undefined) {
    if (app.deprecations.size >= 64) app.deprecations.clear(); // bounded like the base URLs it derives from
    // (Not frozen: V8 copies a frozen array's elements on a slower path. Typed readonly.)
    headers = [
      'Deprecation', DEPRECATION, // RFC 9745
      'Sunset', sunset, // RFC 8594
      'Link', `<${key}>; rel="successor-version"`, // RFC 8288
    ];
    app.deprecations.set(key, headers);
  }
  return headers;
}

