// The limits URL (docs/scaling.md): where the rate-limit state of every process lives. Checked at start, from the
// config file and from --limits / PETSTORE_LIMITS alike, and taken apart here (not by the
// driver), so that every problem is said in terms of the setting and IPv6 literals work.

/** What the Redis driver is given: the URL's parts, decoded. */
export interface LimitsTarget {
  readonly host: string;
  readonly port: number;
  readonly username: string | undefined;
  readonly password: string | undefined;
  readonly db: number;
  readonly tls: boolean;
}

/** The parts of `url`, or why it cannot be a limits URL (to follow "the limits URL "). */
export function parseLimitsUrl(url: string): LimitsTarget | string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return 'must be a URL such as redis://host:6379/0';
  }
  if (u.protocol !== 'redis:' && u.protocol !== 'rediss:') return `must be a redis:// or rediss:// URL (Redis 6.2 or later, or Valkey), got ${u.protocol}//`;
  if (u.hostname === '') return 'must name a host, as in redis://host:6379/0';
  if (u.pathname !== '' && u.pathname !== '/' && !/^\/[0-9]{1,5}$/.test(u.pathname)) return 'may end only in a database number, as in redis://host:6379/0';
  if (u.search !== '' || u.hash !== '') return 'takes no query or fragment (?... or #...): only redis://user:password@host:port/database';
  let username: string;
  let password: string;
  try {
    username = decodeURIComponent(u.username);
    password = decodeURIComponent(u.password);
  } catch {
    return 'has a bad percent-encoding in its user name or password: a % must be followed by two hexadecimal digits (write a literal % as %25)';
  }
  // An IPv6 literal comes bracketed ("[::1]"); the socket wants it bare.
  const host = u.hostname.startsWith('[') && u.hostname.endsWith(']') ? u.hostname.slice(1, -1) : u.hostname;
  const db = u.pathname.length > 1 ? Number(u.pathname.slice(1)) : 0;
  return {
    host,
    port: u.port === '' ? 6379 : Number(u.port),
    username: username === '' ? undefined : username,
    password: password === '' ? undefined : password,
    db,
    tls: u.protocol === 'rediss:',
  };
}

/** Why `url` cannot be a limits URL, or undefined when it can. */
export function limitsUrlProblem(url: string): string | undefined {
  const parsed = parseLimitsUrl(url);
  return typeof parsed === 'string' ? parsed : undefined;
}
