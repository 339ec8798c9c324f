// The client address behind a trusted reverse proxy. X-Forwarded-For is text the client can
// write too (up to the 16 KiB header limit): only the last hop, the one our own proxy
// appended, counts, and only when it is an IP address. Anything else would become a key of
// the per-address limiter table as it is (16 KiB per entry) and, being a fresh string each
// time, would escape both its budget and the per-/64 grouping of IPv6 clients.
import { isIP } from 'node:net';

/**
 * The last X-Forwarded-For hop when it is a valid IPv4 or IPv6 address, lower-cased and
 * without an IPv6 zone id (a zone is local to the proxy's host); otherwise undefined, and the
 * caller uses the socket's peer. Ports, brackets and obfuscated forms ("01.2.3.4") are not
 * addresses: proxies append the bare address.
 */
export function forwardedAddress(header: string | string[] | undefined): string | undefined {
  // node:http joins repeated X-Forwarded-For fields with ", ", so this is always a string.
  if (typeof header !== 'string') return undefined;
  const comma = header.lastIndexOf(',');
  const hop = (comma === -1 ? header : header.slice(comma + 1)).trim();
  const family = isIP(hop);
  if (family === 4) return hop;
  if (family !== 6) return undefined;
  const zone = hop.indexOf('%');
  return (zone === -1 ? hop : hop.slice(0, zone)).toLowerCase();
}
