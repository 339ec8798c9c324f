// The limits URL (docs/scaling.md): where the rate-limit state of every process lives.
// Checked at start, from the config file and from --limits / PETSTORE_LIMITS alike.

/** Why `url` cannot be a limits URL, or undefined when it can. */
export function limitsUrlProblem(url: string): string | undefined {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return 'must be a URL such as redis://host:6379/0';
  }
  if (u.protocol !== 'redis:' && u.protocol !== 'rediss:') return `must be a redis:// or rediss:// URL (Redis 6.2 or later, or Valkey), got ${u.protocol}//`;
  if (u.hostname === '') return 'must name a host, as in redis://host:6379/0';
  if (u.pathname !== '' && u.pathname !== '/' && !/^\/[0-9]{1,5}$/.test(u.pathname)) return 'may end only in a database number, as in redis://host:6379/0';
  return undefined;
}
