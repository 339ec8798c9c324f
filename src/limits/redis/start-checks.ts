// What a failure at start means: a Redis set-up that cannot work (refused credentials, a
// refused command or key, a TLS certificate not trusted, the wrong protocol on the port, a
// replica, a Redis Cluster) stops the start with the real reason; a Redis that only does not
// answer yet does not (the process starts in fallback and uses Redis once it answers).

/** A reply from Redis (NOPERM, unknown command, WRONGPASS...) rather than a lost connection. */
export function isReply(err: unknown): err is Error {
  return err instanceof Error && (err.name === 'ReplyError' || /^(NOPERM|ERR|WRONGPASS|NOAUTH|WRONGTYPE|READONLY|MOVED|ASK|CROSSSLOT|CLUSTERDOWN|LOADING|BUSY|MASTERDOWN|TRYAGAIN)\b/.test(err.message));
}

/** A refusal of the credentials, as Redis words it. */
function isAuthRefusal(err: Error): boolean {
  return /^(WRONGPASS|NOAUTH)\b|AUTH.*(invalid|without any password)|invalid (username|password)/i.test(err.message);
}

/** Replies of a Redis that will answer in a moment (loading its data, a script running, a failover). */
const TRANSIENT = /^(LOADING|BUSY|MASTERDOWN|TRYAGAIN)\b/;

/** Replies that only a Redis Cluster gives. */
const CLUSTER = /^(MOVED|ASK|CROSSSLOT|CLUSTERDOWN)\b/;

/** Codes of node's TLS layer for a certificate not trusted or not matching, or a failed handshake. */
const TLS_CODE = /^(ERR_TLS_|ERR_SSL_|ERR_OSSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|HOSTNAME_MISMATCH|INVALID_PURPOSE)/;

/** A host that is simply not there (yet): the start goes on in fallback. */
const UNREACHABLE = /^(ECONNREFUSED|ENOTFOUND|EHOSTUNREACH|ENETUNREACH|EAI_AGAIN|EADDRNOTAVAIL)$/;

const errCode = (err: unknown): string => String((err as NodeJS.ErrnoException | undefined)?.code ?? '');

/** The message and code of an error, for a log line or a start error. */
export function reasonOf(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const code = errCode(err);
  return code !== '' && !err.message.includes(code) ? `${err.message} (${code})` : err.message;
}

/** A cluster's refusal, by message. */
export const CLUSTER_REFUSAL =
  'is a Redis Cluster, which the limits do not support (each request runs one script on keys of two hash slots): ' +
  'use one Redis, or Redis Sentinel (redis+sentinel://sentinel:26379/mymaster/0)';

export interface StartContext {
  /** The URL as logs show it. */
  readonly where: string;
  readonly tls: boolean;
  readonly passwordGiven: boolean;
  readonly sentinel: boolean;
  /**
   * Whether the same host and port answer over the other protocol (TLS when the URL has none,
   * plain when it has): asked only when the connection broke without a reason.
   */
  readonly otherProtocolAnswers: () => Promise<boolean>;
}

/** Why the start must stop, the whole message, or undefined when Redis only does not answer (yet). */
export async function startRefusal(err: unknown, ctx: StartContext): Promise<string | undefined> {
  const why = await refusal(err, ctx);
  if (why === undefined || why.startsWith(`Redis at ${ctx.where} `)) return why;
  return `the limits URL ${ctx.where}: ${why}`;
}

async function refusal(err: unknown, ctx: StartContext): Promise<string | undefined> {
  if (isReply(err)) {
    const msg = err.message;
    if (isAuthRefusal(err)) {
      return ctx.passwordGiven
        ? `Redis refuses the credentials (${msg}); give the right user and password in the URL, as in redis://user:password@host:6379/0`
        : `Redis wants a password, and the URL gives none (${msg}); give it as in redis://:password@host:6379/0`;
    }
    if (CLUSTER.test(msg)) return `${CLUSTER_REFUSAL} (${msg})`;
    if (TRANSIENT.test(msg)) return undefined;
    if (/^READONLY\b/.test(msg)) {
      return `Redis is a read-only replica (${msg}): point the URL at the master, or let Sentinel find it (redis+sentinel://sentinel:26379/mymaster/0)`;
    }
    // (Worded as before this check ran the script itself: operators may match on it.)
    return `Redis at ${ctx.where} refuses the limiter's script (${msg}): the limits need EVAL and EVALSHA (server-side Lua scripts), the commands ` +
      'the script runs (TIME, HMGET, HSET, PEXPIRE, GET, SET) on the keys petstore:*, and valid credentials; allow them for this ' +
      'user (an ACL that works is in the docs: scaling.md, "Redis ACL"), or run without --limits';
  }
  const code = errCode(err);
  if (TLS_CODE.test(code)) {
    return `TLS with Redis fails: ${reasonOf(err)}; trust the server's CA with ?ca=/path/ca.crt in the URL (or NODE_EXTRA_CA_CERTS), ` +
      'and make sure the URL names the host its certificate is for';
  }
  if (UNREACHABLE.test(code) || ctx.sentinel) return undefined;
  // The connection broke or timed out without a reason: maybe the other protocol is spoken there.
  if (await ctx.otherProtocolAnswers()) {
    return ctx.tls
      ? `the server does not speak TLS (${reasonOf(err)}), but answers without it: use redis:// for this port, or the server's TLS port`
      : `the server speaks TLS on this port (${reasonOf(err)}): use rediss://, or the server's plain port`;
  }
  return undefined;
}
