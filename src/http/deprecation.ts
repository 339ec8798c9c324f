// The headers of a deprecated operation (RFC 9745 Deprecation, RFC 8594 Sunset, RFC 8288 Link
// to its successor), on every one of its responses, errors included: built once per base URL.
import type { Instance } from './exchange.js';
import type { TableRoute } from './route-table.js';

// Deprecated since release 1.0.0 of this service (1 January 2026), per RFC 9745.
const DEPRECATION = `@${Date.UTC(2026, 0, 1) / 1000}`;

/** Per route, the base URL of its last request and the list built for it. */
const LAST = new WeakMap<TableRoute, { readonly base: string; readonly headers: readonly string[] }>();

/** The three headers of `route` (deprecated) under `baseUrl`, as [name, value, ...], built on first use. */
export function deprecationHeaders(app: Instance, route: TableRoute, baseUrl: string): readonly string[] {
  // The list of the route's last base URL (it depends on nothing else): a client keeps its
  // Host, so most requests find it with one comparison (of the very string app.bases keeps).
  const last = LAST.get(route);
  if (last !== undefined && last.base === baseUrl) return last.headers;
  const { successor, sunset } = route.deprecated as NonNullable<TableRoute['deprecated']>;
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
  LAST.set(route, { base: baseUrl, headers });
  return headers;
}
