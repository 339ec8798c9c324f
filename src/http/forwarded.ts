// The public scheme and host behind a trusted reverse proxy, for the links' base URL: from
// the last element of Forwarded (RFC 7239), else the last X-Forwarded-Proto and
// X-Forwarded-Host values. The last one, as for the client address (client-address.ts): it is
// the one our own proxy appended; anything before it is text the client could write.
import type { IncomingMessage } from 'node:http';

/** A host as links may carry it: a name or IPv4 address, or a bracketed IPv6 one, with an optional port. */
const SANE_HOST = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::([0-9]{1,5}))?$/;

/** A Host value fit for links: a name or address, and a port from 1 to 65535 if any. */
export function isSaneHost(host: string): boolean {
  const m = SANE_HOST.exec(host);
  if (m === null) return false;
  const port = m[1];
  return port === undefined || (Number(port) >= 1 && Number(port) <= 65535);
}

export interface ProxiedOrigin {
  /** `http` or `https`, when the proxy said which. */
  readonly proto: 'http' | 'https' | undefined;
  /** The host the client asked for, when the proxy said it and it is a sane host. */
  readonly host: string | undefined;
}

/** What the proxy says about the client's request; undefined when it says nothing usable. */
export function proxiedOrigin(req: IncomingMessage): ProxiedOrigin | undefined {
  const headers = req.headers;
  const forwarded = headers.forwarded;
  let proto: ProxiedOrigin['proto'];
  let host: string | undefined;
  if (forwarded !== undefined) {
    const last = lastForwardedElement(forwarded);
    if (last !== undefined) {
      proto = scheme(last.get('proto'));
      host = saneHost(last.get('host'));
    }
  }
  proto ??= scheme(lastValue(headers['x-forwarded-proto']));
  host ??= saneHost(lastValue(headers['x-forwarded-host']));
  return proto === undefined && host === undefined ? undefined : { proto, host };
}

function scheme(value: string | undefined): ProxiedOrigin['proto'] {
  if (value === undefined) return undefined;
  const v = value.toLowerCase();
  return v === 'https' || v === 'http' ? v : undefined;
}

function saneHost(value: string | undefined): string | undefined {
  return value !== undefined && isSaneHost(value) ? value : undefined;
}

/** The last of comma-separated values (node joins repeated fields with ", "), trimmed. */
function lastValue(header: string | string[] | undefined): string | undefined {
  if (typeof header !== 'string') return undefined;
  const v = header.slice(header.lastIndexOf(',') + 1).trim();
  return v === '' ? undefined : v;
}

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// An unquoted value: a token, leniently with ':' and brackets, which proxies write unquoted
// in host=name:port and for=[v6] although RFC 7239 asks for quotes there.
const VALUE = /^[!#$%&'*+\-.^_`|~0-9A-Za-z:[\]]+$/;

/**
 * The parameters of the last element of a Forwarded header (RFC 7239 section 4:
 * `Forwarded: for=192.0.2.60;proto=http;by=203.0.113.43, for="[2001:db8::1]";proto=https`),
 * names lower-cased, quoted values unquoted. A last element that does not parse: undefined
 * (nothing from it is trusted).
 */
export function lastForwardedElement(header: string | string[]): Map<string, string> | undefined {
  const text = Array.isArray(header) ? header.join(', ') : header;
  // The last element starts after the last comma outside a quoted string.
  let start = 0;
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted && c === '\\') i++;
    else if (c === '"') quoted = !quoted;
    else if (c === ',' && !quoted) start = i + 1;
  }
  if (quoted) return undefined;
  const params = new Map<string, string>();
  let i = start;
  for (;;) {
    while (text[i] === ' ' || text[i] === '\t') i++;
    const eq = text.indexOf('=', i);
    if (eq === -1) return params.size > 0 && text.slice(i).trim() === '' ? params : undefined;
    const name = text.slice(i, eq).trim().toLowerCase();
    if (!TOKEN.test(name) || params.has(name)) return undefined; // RFC 7239 section 4: each name once
    let value: string;
    i = eq + 1;
    if (text[i] === '"') {
      value = '';
      for (i++; i < text.length && text[i] !== '"'; i++) value += text[i] === '\\' ? text[++i] : text[i];
      i++; // the closing quote
    } else {
      const end = text.indexOf(';', i);
      value = (end === -1 ? text.slice(i) : text.slice(i, end)).trim();
      if (!VALUE.test(value)) return undefined;
      i = end === -1 ? text.length : end;
    }
    params.set(name, value);
    while (text[i] === ' ' || text[i] === '\t') i++;
    if (i >= text.length) return params;
    if (text[i] !== ';') return undefined;
    i++;
  }
}
