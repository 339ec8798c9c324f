// trustProxy: which reverse proxies in front of the service are believed when they append the
// client's address to X-Forwarded-For. `true`: the one in front (the socket's peer, whoever it
// is), as before; a number N: a chain of N proxies, each appending the address it got the
// request from; a list of addresses and CIDR ranges: the proxies by address, however many.
import { isIP } from 'node:net';
import { clip } from '../core/index.js';
import type { AddressRange, TrustProxy } from './contract.js';

/** Most proxies in a chain that `trustProxy: N` accepts. */
export const MAX_PROXY_HOPS = 16;
/** Most entries in a `trustProxy` list. */
export const MAX_PROXY_RANGES = 256;

/**
 * An IP address's bytes: 4 for IPv4 (an IPv4-mapped IPv6 address, ::ffff:a.b.c.d, too), 16
 * for IPv6 (a zone id ignored); undefined for anything else.
 */
export function addressBytes(text: string): Uint8Array | undefined {
  const zone = text.indexOf('%');
  const addr = zone === -1 ? text : text.slice(0, zone);
  const family = isIP(addr);
  if (family === 4) return Uint8Array.from(addr.split('.').map(Number));
  if (family !== 6) return undefined;
  const lower = addr.toLowerCase();
  // A dotted tail (::ffff:1.2.3.4, or any IPv6 ending in IPv4 notation) becomes two groups.
  const dot = lower.lastIndexOf(':');
  let groupsText = lower;
  const tail = lower.slice(dot + 1);
  if (tail.includes('.')) {
    const b = tail.split('.').map(Number) as [number, number, number, number];
    groupsText = `${lower.slice(0, dot + 1)}${((b[0] << 8) | b[1]).toString(16)}:${((b[2] << 8) | b[3]).toString(16)}`;
  }
  const [head = '', rest] = groupsText.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = rest === undefined || rest === '' ? [] : rest.split(':');
  const groups = rest === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  const bytes = new Uint8Array(16);
  groups.forEach((g, i) => {
    const n = parseInt(g, 16);
    bytes[2 * i] = n >> 8;
    bytes[2 * i + 1] = n & 0xff;
  });
  // IPv4-mapped: the IPv4 address itself, so that "10.0.0.0/8" covers ::ffff:10.1.2.3.
  if (bytes.subarray(0, 10).every((x) => x === 0) && bytes[10] === 0xff && bytes[11] === 0xff) return bytes.slice(12);
  return bytes;
}

/** "10.0.0.0/8", "2001:db8::/32" or a bare address (all its bits); a problem text otherwise. */
export function parseRange(text: string): AddressRange | string {
  const slash = text.indexOf('/');
  const bytes = addressBytes(slash === -1 ? text : text.slice(0, slash));
  if (bytes === undefined) return 'is not an IP address or a CIDR range';
  const max = bytes.length * 8;
  if (slash === -1) return { bytes, bits: max };
  const bitsText = text.slice(slash + 1);
  const bits = /^[0-9]{1,3}$/.test(bitsText) ? Number(bitsText) : NaN;
  if (!(bits >= 0 && bits <= max)) return `has a prefix length that is not 0 to ${max}`;
  return { bytes, bits };
}

/** Whether the address (bytes as addressBytes gives them) is in the range. */
export function inRange(bytes: Uint8Array, range: AddressRange): boolean {
  if (bytes.length !== range.bytes.length) return false;
  const whole = range.bits >> 3;
  for (let i = 0; i < whole; i++) if (bytes[i] !== range.bytes[i]) return false;
  const rest = range.bits & 7;
  if (rest === 0) return true;
  const mask = (0xff << (8 - rest)) & 0xff;
  return ((bytes[whole] as number) & mask) === ((range.bytes[whole] as number) & mask);
}

const TRUST_PROXY_FORMS = `true or false, a number of proxies from 1 to ${MAX_PROXY_HOPS}, or a list of the proxies' addresses and CIDR ranges`;

/** Reads trustProxy: false, true (one proxy), N proxies in a chain, or the proxies' addresses (proxies.ts). */
export function readTrustProxy(v: unknown, problem: (text: string) => void): TrustProxy {
  if (v === undefined || v === false) return false;
  if (v === true) return Object.freeze({ hops: 1 });
  if (typeof v === 'number') {
    if (Number.isInteger(v) && v >= 1 && v <= MAX_PROXY_HOPS) return Object.freeze({ hops: v });
    problem(`trustProxy must be ${TRUST_PROXY_FORMS}; got ${clip(String(v), 40)}`);
    return false;
  }
  if (Array.isArray(v)) {
    if (v.length === 0 || v.length > MAX_PROXY_RANGES) {
      problem(`trustProxy as a list must name 1 to ${MAX_PROXY_RANGES} addresses or ranges; got ${v.length}`);
      return false;
    }
    const ranges: AddressRange[] = [];
    v.forEach((item: unknown, i) => {
      const range = typeof item === 'string' ? parseRange(item) : 'is not a string';
      if (typeof range === 'string') problem(`trustProxy[${i}] ${range}: ${clip(JSON.stringify(item) ?? String(item), 60)}`);
      else ranges.push(Object.freeze(range));
    });
    return Object.freeze({ ranges: Object.freeze(ranges) });
  }
  problem(`trustProxy must be ${TRUST_PROXY_FORMS}; got ${clip(JSON.stringify(v) ?? String(v), 40)}`);
  return false;
}

