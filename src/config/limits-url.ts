// The limits URL (docs/scaling.md): where the rate-limit state of every process lives. Checked at start, from the
// config file and from --limits / PETSTORE_LIMITS alike, and taken apart here (not by the
// driver), so that every problem is said in terms of the setting and IPv6 literals work.
//
// Three forms:
//   redis://user:password@host:6379/0                one Redis (or Valkey)
//   rediss://user:password@host:6380/0?ca=FILE       the same over TLS; ca, cert and key name
//                                                    PEM files (a private CA, a client certificate)
//   redis+sentinel://user:password@s1:26379,s2:26379/mymaster/0
//                                                    Redis Sentinel: the sentinels, the master's
//                                                    name, the database (rediss+sentinel: TLS to
//                                                    all of them); the user and password are the
//                                                    master's, sentinelPassword=... the sentinels'
// Redis Cluster is refused: the limiter's one script per request reads keys of two hash slots.

/** A host and port of the URL, the IPv6 literal unbracketed. */
export interface HostPort {
  readonly host: string;
  readonly port: number;
}

/** What the Redis driver is given: the URL's parts, decoded. */
export interface LimitsTarget {
  readonly host: string;
  readonly port: number;
  readonly username: string | undefined;
  readonly password: string | undefined;
  readonly db: number;
  readonly tls: boolean;
  /** PEM files (rediss only): the CA to trust, and a client certificate and its key. */
  readonly ca?: string;
  readonly cert?: string;
  readonly key?: string;
  /** Redis Sentinel: the sentinels (host and port above are the first), the master's name. */
  readonly sentinels?: readonly HostPort[];
  readonly masterName?: string;
  readonly sentinelPassword?: string;
}

const TLS_FILES = ['ca', 'cert', 'key'] as const;

/** The parts of `url`, or why it cannot be a limits URL (to follow "the limits URL "). */
export function parseLimitsUrl(url: string): LimitsTarget | string {
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(url)?.[1]?.toLowerCase();
  if (scheme === 'redis+sentinel' || scheme === 'rediss+sentinel') return parseSentinelUrl(url, scheme === 'rediss+sentinel');
  if (scheme !== undefined && /^rediss?[+-]cluster$/.test(scheme)) {
    return 'names a Redis Cluster, which the limits do not support (each request runs one script on keys of two hash slots): use one Redis, or Redis Sentinel (redis+sentinel://...)';
  }
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return 'must be a URL such as redis://host:6379/0';
  }
  if (u.protocol !== 'redis:' && u.protocol !== 'rediss:') {
    return `must be a redis:// or rediss:// URL, or redis+sentinel:// (Redis 6.2 or later, or Valkey), got ${u.protocol}//`;
  }
  if (u.hostname === '') return 'must name a host, as in redis://host:6379/0';
  if (u.pathname !== '' && u.pathname !== '/' && !/^\/[0-9]{1,5}$/.test(u.pathname)) return 'may end only in a database number, as in redis://host:6379/0';
  const tls = u.protocol === 'rediss:';
  const query = readQuery(u, tls, false);
  if (typeof query === 'string') return query;
  const credentials = readCredentials(u);
  if (typeof credentials === 'string') return credentials;
  return {
    ...hostPort(u, 6379),
    ...credentials,
    db: u.pathname.length > 1 ? Number(u.pathname.slice(1)) : 0,
    tls,
    ...query,
  };
}

/** redis+sentinel://[user:password@]host[:port][,host[:port]...]/master[/db][?...] */
function parseSentinelUrl(url: string, tls: boolean): LimitsTarget | string {
  const m = /^[^:]+:\/\/(?:([^@/?#]*)@)?([^/?#]*)(\/[^?#]*)?(\?[^#]*)?(#.*)?$/.exec(url);
  if (m === null) return 'must be a URL such as redis+sentinel://host:26379,host2:26379/mymaster/0';
  const [, userinfo, hostList = '', path = '', search = '', hash] = m;
  if (hash !== undefined) return 'takes no fragment (#...)';
  const sentinels: HostPort[] = [];
  for (const h of hostList.split(',')) {
    let u: URL;
    try {
      u = new URL(`redis://${h}`);
    } catch {
      return 'must list the sentinels as host:port separated by commas, as in redis+sentinel://host:26379,host2:26379/mymaster/0';
    }
    if (u.hostname === '' || u.username !== '' || u.pathname !== '' || u.search !== '') {
      return 'must list the sentinels as host:port separated by commas, as in redis+sentinel://host:26379,host2:26379/mymaster/0';
    }
    sentinels.push(hostPort(u, 26379));
  }
  const p = /^\/([^/]+)(?:\/([0-9]{1,5}))?\/?$/.exec(path);
  if (p === null) return 'must name the master after the sentinels, as in redis+sentinel://host:26379/mymaster/0 (then optionally the database)';
  let masterName: string;
  try {
    masterName = decodeURIComponent(p[1] as string);
  } catch {
    return 'has a bad percent-encoding in its master name';
  }
  // The credentials, read as in a one-host URL.
  const auth = new URL(`redis://${userinfo === undefined ? '' : `${userinfo}@`}h/${search}`);
  const credentials = readCredentials(auth);
  if (typeof credentials === 'string') return credentials;
  const query = readQuery(auth, tls, true);
  if (typeof query === 'string') return query;
  const first = sentinels[0] as HostPort;
  return { ...first, ...credentials, db: p[2] === undefined ? 0 : Number(p[2]), tls, ...query, sentinels, masterName };
}

function hostPort(u: URL, defaultPort: number): HostPort {
  // An IPv6 literal comes bracketed ("[::1]"); the socket wants it bare.
  const host = u.hostname.startsWith('[') && u.hostname.endsWith(']') ? u.hostname.slice(1, -1) : u.hostname;
  return { host, port: u.port === '' ? defaultPort : Number(u.port) };
}

function readCredentials(u: URL): { username: string | undefined; password: string | undefined } | string {
  let username: string;
  let password: string;
  try {
    username = decodeURIComponent(u.username);
    password = decodeURIComponent(u.password);
  } catch {
    return 'has a bad percent-encoding in its user name or password: a % must be followed by two hexadecimal digits (write a literal % as %25)';
  }
  return { username: username === '' ? undefined : username, password: password === '' ? undefined : password };
}

/** The query: TLS files with rediss, the sentinels' password with Sentinel; nothing else. */
function readQuery(u: URL, tls: boolean, sentinel: boolean): { ca?: string; cert?: string; key?: string; sentinelPassword?: string } | string {
  if (u.hash !== '') return 'takes no query or fragment (?... or #...) but the ones named in the docs';
  const allowed = [...(tls ? TLS_FILES : []), ...(sentinel ? ['sentinelPassword'] : [])];
  const out: { ca?: string; cert?: string; key?: string; sentinelPassword?: string } = {};
  for (const [name, value] of u.searchParams) {
    if (!allowed.includes(name) || name in out) {
      if (allowed.length === 0) return 'takes no query or fragment (?... or #...): only redis://user:password@host:port/database (TLS files go with rediss://: ?ca=FILE&cert=FILE&key=FILE)';
      return `takes only the query parameters ${allowed.join(', ')}, each once`;
    }
    if (value === '') return `has an empty ${name}`;
    out[name as keyof typeof out] = value;
  }
  if ((out.cert === undefined) !== (out.key === undefined)) return 'needs cert and key together (a client certificate and its private key)';
  return out;
}

/** Why `url` cannot be a limits URL, or undefined when it can. */
export function limitsUrlProblem(url: string): string | undefined {
  const parsed = parseLimitsUrl(url);
  return typeof parsed === 'string' ? parsed : undefined;
}
