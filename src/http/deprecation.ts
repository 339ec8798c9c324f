// The headers of a deprecated operation (RFC 9745 Deprecation, RFC 8594 Sunset, RFC 8288 Link
// to its successor), on every one of its responses, errors included: built once per base URL.
import type { Instance } from './exchange.js';
import type { TableRoute } from './route-table.js';

// Deprecated since release 1.0.0 of this service (1 January 2026), per RFC 9745.
const DEPRECATION = `@${Date.UTC(2026, 0, 1) / 1000}`;

/** The three headers of `route` (deprecated) under `baseUrl`, built on first use. */
export function deprecationHeaders(app: Instance, route: TableRoute, baseUrl: string): Readonly<Record<string, string>> {
  const { successor, sunset } = route.deprecated as NonNullable<TableRoute['deprecated']>;
  const key = baseUrl + successor;
  let headers = app.deprecations.get(key);
  if (headers === undefined) {
    if (app.deprecations.size >= 64) app.deprecations.clear(); // bounded like the base URLs it derives from
    headers = Object.freeze({
      deprecation: DEPRECATION, // RFC 9745
      sunset, // RFC 8594
      link: `<${key}>; rel="successor-version"`, // RFC 8288
    });
    app.deprecations.set(key, headers);
  }
  return headers;
}
