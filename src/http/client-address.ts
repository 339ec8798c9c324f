// The client address behind a trusted reverse proxy. X-Forwarded-For is text the client can
// write too (up to the 16 KiB header limit): only the last hop, the one our own proxy
// appended, counts, and only when it is an IP address. Anything else would become a key of
// the per-address limiter table as it is (16 KiB per entry) and, being a fresh string each
// time, would escape both its budget and the per-/64 grouping of IPv6 clients.
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import type { Config } from '../config/index.js';

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

/**
 * The address a keyless request is limited by: the socket's peer, or with trustProxy the
 * last X-Forwarded-For hop (the one our own proxy appended) when it is an IP address (see
 * forwardedAddress). IPv6 clients own whole /64s, so they are limited per /64.
 */
export function clientAddress(req: IncomingMessage, config: Config): string {
  let addr = req.socket.remoteAddress ?? 'unknown';
  if (config.trustProxy) {
    const forwarded = forwardedAddress(req.headers['x-forwarded-for']);
    if (forwarded !== undefined) addr = forwarded;
  }
  if (addr.startsWith('::ffff:')) addr = addr.slice(7);
  if (addr.includes(':')) return `ip6:${ipv6Prefix64(addr)}`;
  return `ip:${addr}`;
}

/**
 * The client's address as the access log shows it: the socket's peer, or with trustProxy the
 * last X-Forwarded-For hop when it is an IP address (the proxy's own address says nothing).
 */
export function loggedAddress(req: IncomingMessage, config: Config): string | undefined {
  if (config.trustProxy) {
    const forwarded = forwardedAddress(req.headers['x-forwarded-for']);
    if (forwarded !== undefined) return forwarded;
  }
  return req.socket.remoteAddress;
}

function ipv6Prefix64(addr: string): string {
  const [head = '', tail] = addr.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups = tail === undefined ? left : [...left, ...Array<string>(Math.max(0, 8 - left.length - right.length)).fill('0'), ...right];
  return groups.slice(0, 4).map((g) => g.toLowerCase().replace(/^0+(?=.)/, '')).join(':');
}
