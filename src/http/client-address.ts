// The client address behind trusted reverse proxies. X-Forwarded-For is text the client can
// write too (up to the 16 KiB header limit): only the hops our own proxies appended count
// (trustProxy: the last one, the Nth from the end for a chain of N, or back while they come
// from the proxies' addresses), and only when it is an IP address. Anything else would become a key of
// the per-address limiter table as it is (16 KiB per entry) and, being a fresh string each
// time, would escape both its budget and the per-/64 grouping of IPv6 clients.
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import { addressBytes, inRange, type Config, type TrustProxy } from '../config/index.js';

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
  return hopAddress(comma === -1 ? header : header.slice(comma + 1));
}

/** One hop of X-Forwarded-For as an address (see forwardedAddress), or undefined. */
function hopAddress(text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  const hop = text.trim();
  const family = isIP(hop);
  if (family === 4) return hop;
  if (family !== 6) return undefined;
  const zone = hop.indexOf('%');
  return (zone === -1 ? hop : hop.slice(0, zone)).toLowerCase();
}

/**
 * The client's address as trustProxy believes X-Forwarded-For, or undefined (then the socket's
 * peer is the client):
 * - `{hops: 1}` (`true`): the last hop, the one the proxy in front appended;
 * - `{hops: N}`: the Nth hop from the end (each of the N proxies appended the address it got
 *   the request from, the first one the client's); the first hop when there are fewer;
 * - `{ranges}`: when the peer is one of the proxies, the hops from the end back to the first
 *   that is not a proxy's address (the client), or to the first hop when all are; a hop that is
 *   not an address stops the walk at the one after it.
 * A hop that is not an IP address is never the client.
 */
export function forwardedClient(header: string | string[] | undefined, peer: string | undefined, trust: TrustProxy): string | undefined {
  if (trust === false || typeof header !== 'string') return undefined;
  if ('hops' in trust) {
    if (trust.hops === 1) return forwardedAddress(header);
    const hops = header.split(',');
    return hopAddress(hops[Math.max(0, hops.length - trust.hops)]);
  }
  const peerBytes = peer === undefined ? undefined : addressBytes(peer);
  if (peerBytes === undefined || !trusted(peerBytes, trust.ranges)) return undefined;
  const hops = header.split(',');
  let client: string | undefined;
  for (let i = hops.length - 1; i >= 0; i--) {
    const addr = hopAddress(hops[i]);
    if (addr === undefined) return client;
    client = addr;
    const bytes = addressBytes(addr);
    if (bytes === undefined || !trusted(bytes, trust.ranges)) return client;
  }
  return client;
}

function trusted(bytes: Uint8Array, ranges: Extract<TrustProxy, { ranges: unknown }>['ranges']): boolean {
  for (const range of ranges) if (inRange(bytes, range)) return true;
  return false;
}

/**
 * The address a keyless request is limited by: the socket's peer, or with trustProxy the
 * X-Forwarded-For hop it believes to be the client's (forwardedClient). IPv6 clients own whole /64s, so they are limited per /64.
 */
export function clientAddress(req: IncomingMessage, config: Config): string {
  let addr = req.socket.remoteAddress ?? 'unknown';
  if (config.trustProxy !== false) {
    const forwarded = forwardedClient(req.headers['x-forwarded-for'], req.socket.remoteAddress, config.trustProxy);
    if (forwarded !== undefined) addr = forwarded;
  }
  if (addr.startsWith('::ffff:')) addr = addr.slice(7);
  if (addr.includes(':')) return `ip6:${ipv6Prefix64(addr)}`;
  return `ip:${addr}`;
}

/**
 * The client's address as the access log shows it: the socket's peer, or with trustProxy the
 * hop it believes to be the client's (the proxy's own address says nothing).
 */
export function loggedAddress(req: IncomingMessage, config: Config): string | undefined {
  if (config.trustProxy !== false) {
    const forwarded = forwardedClient(req.headers['x-forwarded-for'], req.socket.remoteAddress, config.trustProxy);
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
