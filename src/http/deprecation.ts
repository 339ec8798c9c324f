// The headers of a deprecated operation (RFC 9745 Deprecation, RFC 8594 Sunset, RFC 8288 Link
// to its successor), on every one of its responses, errors included.
import type { Exchange, Instance } from './exchange.js';
import { base } from './request.js';

// Deprecated since release 1.0.0 of this service (1 January 2026), per RFC 9745.
const DEPRECATION = `@${Date.UTC(2026, 0, 1) / 1000}`;

export function addDeprecation(app: Instance, x: Exchange, successor: string, sunset: string): void {
  const baseUrl = base(app, x.req);
  const key = baseUrl + successor;
  let link = app.links.get(key);
  if (link === undefined) {
    if (app.links.size >= 64) app.links.clear(); // bounded like the base URLs it derives from
    link = `<${key}>; rel="successor-version"`; // RFC 8288
    app.links.set(key, link);
  }
  x.headers.deprecation = DEPRECATION; // RFC 9745
  x.headers.sunset = sunset; // RFC 8594
  x.headers.link = link;
}
