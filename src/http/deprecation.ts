// The headers of a deprecated operation (RFC 9745 Deprecation, RFC 8594 Sunset, RFC 8288 Link
// to its successor), on every one of its responses, errors included: built once per base URL.
import type { Instance } from './exchange.js';
import type { TableRoute } from './route-table.js';

// Deprecated since release 1.0.0 of this service (1 January 2026), per RFC 9745.
const DEPRECATION = `@${Date.UTC(2026, 0, 1) / 1000}`;

/**
 * The three headers of `route` (deprecated) under a base URL, as [name, value, ...]: a function
 * per route that keeps the list of its last base URL (it depends on nothing else), so a
 * client that keeps its Host finds it with one comparison (of the very string app.bases keeps);
 * other lists are built on first use and kept per app.
 */
export function deprecationHeadersOf(route: TableRoute): (app: Instance, baseUrl: string) => readonly string[] {
  const { successor, sunset } = route.deprecated as NonNullable<TableRoute['deprecated']>;
  let lastBase: string | undefined;
  let lastHeaders: readonly string[] = [];
  return (app, baseUrl) => {
    if (baseUrl === lastBase) return lastHeaders;
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
    lastBase = baseUrl;
    lastHeaders = headers;
    return headers;
  };
}
