// The HTTP layer: one request lifecycle, and one function (`send`) that every response,
// errors included, passes through. The phases, in order, and the statuses they answer:
//   0. version, Host (RFC 9112)         400 invalid_request: HTTP/2.0 or 0.9 request line;
//                                       Host missing or repeated in HTTP/1.1
//      (an absolute-form target, http://host/path, is reduced to its path first)
//   1. /healthz                         200 (no key, no limit); 405 for methods but GET, HEAD
//   2. route match (kept for phase 5)   -- deprecated routes get their headers from here on
//   3. authentication                   key, or the per-address budget of keyless requests
//   4. rate limit                       429 rate_limited / temporarily_banned
//      (CORS preflights are answered between 2 and 3, 204, before authentication)
//   5. 401 / 417 / 404 / 405            unauthorized, expectation_failed, not_found,
//                                       method_not_allowed (+ Allow)
//   6. handler                          400, 413, 415, 501 -> 200, 201, 404, 501, 503
//      (100 Continue goes out only here, once a body is wanted: see readJsonBody)
// Requests node:http cannot parse, and CONNECT, are answered in server.ts (400/408/431/405).
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { authenticate, challenge, type AuthResult } from './auth.js';
import { BodyTooLarge, PendingBodies, sendContinue } from './body.js';
import type { Config } from './config/index.js';
import { ApiError, clip, type ErrorCode } from './core/index.js';
import { forwardedAddress } from './forwarded.js';
import { RATE_LIMIT_HEADERS, setLimitHeaders, type Limiter, type LimitResult } from './limits/index.js';
import { parseQuery } from './query.js';
import { Router, type Match } from './router.js';
import { PageCache, type HandlerContext, type Reply, type RouteSpec } from './routes.js';
import type { PetStore } from './store/index.js';
import { hasPageVersion, StoreBusyError, StoreInputError, StoreUnavailableError } from './store/index.js';
import type { Clock, Logger } from './core/types.js';

export interface AppDeps {
  readonly store: PetStore;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Limits per API key (ids are key digests). */
  readonly keyLimiter: Limiter;
  /** Limits per client address, for requests without a valid key (bounded table). */
  readonly addressLimiter: Limiter;
  /** The config in force; a reload swaps it. */
  config(): Config;
  /** Public base URL ending in /v1, when fixed by --env; otherwise derived from the request. */
  readonly publicBase: string | undefined;
  readonly routes: readonly RouteSpec[];
}

export type RequestListener = (req: IncomingMessage, res: ServerResponse) => void;

/** What one app instance keeps between requests (nothing is module-level). */
interface Instance {
  readonly deps: AppDeps;
  readonly router: Router<RouteSpec>;
  readonly pages: HandlerContext['pages'];
  readonly bodies: PendingBodies;
  readonly accessLog: boolean;
  /** Host header value -> base URL, so a request does not build the same string again. */
  readonly bases: Map<string, string>;
  /** Base URL + successor path -> the deprecation Link header value. */
  readonly links: Map<string, string>;
  /** Creates refused because the write queue was full, not yet logged (one line a second at most). */
  busy: { refused: number; loggedAt: number };
}

/** Per-request state carried through the phases. */
interface Exchange {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly started: number;
  readonly reqId: string;
  /** Headers every response of this request carries (rate limit, deprecation, ...). */
  readonly headers: Record<string, string>;
  keyName: string | undefined;
}

const JSON_TYPE = 'application/json; charset=utf-8';
// The 401 answers never vary: built once (they are the answer to every key-guessing flood).
const MISSING_KEY = new ApiError('unauthorized', 'An API key is required: send "Authorization: Bearer <key>".');
const INVALID_KEY = new ApiError('unauthorized', 'The API key is not valid.');
const OTHER_SCHEME = new ApiError('unauthorized', 'Only API keys are accepted: send "Authorization: Bearer <key>".');
// A client-sent request id is echoed only when it is short and plain, so logs stay clean.
const SANE_REQUEST_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/;
const SANE_HOST = /^[A-Za-z0-9.-]+(?::[0-9]{1,5})?$|^\[[0-9A-Fa-f:.]+\](?::[0-9]{1,5})?$/;
// Deprecated since release 1.0.0 of this service (1 January 2026), per RFC 9745.
const DEPRECATION = `@${Date.UTC(2026, 0, 1) / 1000}`;
// After a 413 the rest of the upload is read and thrown away up to this many bytes, so the
// client sees the status instead of a connection reset; past it the connection is dropped.
const DRAIN_CAP_BYTES = 8 * 1024 * 1024;
const DRAIN_WAIT_MS = 5_000;

export function createApp(deps: AppDeps): RequestListener {
  const router = new Router<RouteSpec>();
  for (const route of deps.routes) router.add(route.method, `/v1${route.path}`, route);
  const app: Instance = {
    deps,
    router,
    // Pages are cached only for a store that offers a version to check them against.
    pages: hasPageVersion(deps.store) ? { cache: new PageCache(), version: deps.store } : undefined,
    bodies: new PendingBodies(),
    // Decided once: with access logs off, a request builds no log fields at all.
    accessLog: deps.logger.enabled?.('info') ?? true,
    bases: new Map(),
    links: new Map(),
    busy: { refused: 0, loggedAt: -Infinity },
  };
  const ids = requestIds();

  return (req, res) => {
    const x: Exchange = {
      req,
      res,
      started: deps.clock.monotonic(),
      reqId: requestId(req, ids),
      headers: {},
      keyName: undefined,
    };
    handle(app, x)?.catch((err: unknown) => fail(app, x, err));
  };
}

/** Synchronous until a handler returns a promise (only createPet does), to spare the hot reads. */
function handle(app: Instance, x: Exchange): Promise<void> | undefined {
  // Errors are caught here rather than by the caller: V8 counts a function's calls toward
  // optimizing it at its returns, so a function that mostly exits by throw (every 400 and
  // 401) would stay interpreted.
  try {
    const { deps, router } = app;
    let url = x.req.url ?? '/';
    // RFC 9112 section 3.2.2: a server must accept the absolute-form (http://host/v1/pets) too.
    if (url.charCodeAt(0) !== SLASH) url = originForm(url);
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    const method = x.req.method ?? 'GET';

    // Phase 0, malformed HTTP that node's parser lets through (see answerClientError in server.ts).
    if (x.req.httpVersionMajor !== 1) throw unsupportedVersion(x);
    const hostProblem = checkHost(x.req);
    if (hostProblem !== undefined) throw new ApiError('invalid_request', hostProblem);

    if (path === '/healthz') {
      if (method !== 'GET' && method !== 'HEAD') {
        x.headers.allow = 'GET, HEAD';
        throw new ApiError('method_not_allowed', `Method ${clip(method)} is not allowed on /healthz; allowed: GET, HEAD.`);
      }
      send(app, x, 200, '{"status":"ok"}');
      return undefined;
    }

    const match = router.match(method, path);
    const route = match.kind === 'found' ? match.handler : undefined;
    // Every response of a deprecated operation carries the headers, errors included.
    if (route?.deprecated) addDeprecation(app, x, route.deprecated.successor, route.deprecated.sunset);

    const config = deps.config();
    if (config.cors.origins.length > 0 && allowCors(x, config)) {
      // A CORS preflight (Fetch standard) carries no credentials: answer it before authentication.
      if (method === 'OPTIONS' && x.req.headers['access-control-request-method'] !== undefined && match.kind !== 'not_found') {
        const limit = chargeAddress(deps, x, config);
        if (limit instanceof Promise) return limit.then((l) => answerPreflight(app, x, l, match.allow));
        answerPreflight(app, x, limit, match.allow);
        return undefined;
      }
    }
    // Keyless and wrong-key requests share a small per-address budget, so keys cannot be
    // guessed at speed; their 401 carries that budget's headers.
    let auth: AuthResult | undefined;
    let limit: LimitResult | Promise<LimitResult>;
    if (route?.auth === 'none') {
      limit = chargeAddress(deps, x, config);
    } else {
      auth = authenticate(x.req.headers.authorization, config.keys);
      if (auth.kind === 'key') {
        x.keyName = auth.entry.name;
        limit = deps.keyLimiter.take(auth.entry.digest, auth.entry.limits);
      } else {
        limit = chargeAddress(deps, x, config);
      }
    }
    // Only a limiter kept elsewhere answers with a promise: the in-memory one stays synchronous.
    if (limit instanceof Promise) return limit.then((l) => admitted(app, x, l, auth, match, config, url, q, method, path));
    return admitted(app, x, limit, auth, match, config, url, q, method, path);
  } catch (err) {
    fail(app, x, err);
    return undefined;
  }
}

/** Phases 4 to 6, once the limiter has answered. Catches its own errors, as handle() does. */
function admitted(
  app: Instance, x: Exchange, limit: LimitResult, auth: AuthResult | undefined, match: Match<RouteSpec>, config: Config,
  url: string, q: number, method: string, path: string,
): Promise<void> | undefined {
  try {
    applyLimit(x, limit);
    if (auth !== undefined && auth.kind !== 'key') {
      x.headers['www-authenticate'] = challenge(auth);
      throw auth.kind === 'missing' ? MISSING_KEY : auth.kind === 'invalid' ? INVALID_KEY : OTHER_SCHEME;
    }
    // RFC 9110 section 10.1.1: an expectation the server cannot meet is a 417.
    const expect = x.req.headers.expect;
    if (expect !== undefined && expect.toLowerCase() !== '100-continue') {
      throw new ApiError('expectation_failed', `Expect "${clip(expect)}" is not supported; only 100-continue is.`);
    }
    if (match.kind === 'not_found') throw new ApiError('not_found', `No route for ${method} ${clip(path)}.`);
    if (match.kind === 'method_not_allowed') {
      x.headers.allow = match.allow;
      throw new ApiError('method_not_allowed', `Method ${clip(method)} is not allowed on ${clip(path)}; allowed: ${match.allow}.`);
    }
    const ctx: HandlerContext = {
      req: x.req,
      res: x.res,
      params: match.params,
      query: parseQuery(q === -1 ? '' : url.slice(q + 1)),
      store: app.deps.store,
      maxBodyBytes: config.maxBodyBytes,
      base: base(app, x.req),
      config,
      pages: app.pages,
      bodies: app.bodies,
    };
    const reply = match.handler.handler(ctx);
    if (reply instanceof Promise) return reply.then((r) => (r instanceof ApiError ? fail(app, x, r) : sendReply(app, x, r)));
    if (reply instanceof ApiError) fail(app, x, reply);
    else sendReply(app, x, reply);
    return undefined;
  } catch (err) {
    fail(app, x, err);
    return undefined;
  }
}

/** A CORS preflight's 204, charged to the client address like a keyless request. */
function answerPreflight(app: Instance, x: Exchange, limit: LimitResult, allow: string): void {
  applyLimit(x, limit);
  x.headers['access-control-allow-methods'] = allow;
  x.headers['access-control-allow-headers'] = 'Authorization, Content-Type, X-Request-Id';
  x.headers['access-control-max-age'] = '600';
  send(app, x, 204, undefined);
}

/** Sends a handler's reply with the headers gathered so far. */
function sendReply(app: Instance, x: Exchange, reply: Reply): void {
  if (reply.headers) Object.assign(x.headers, reply.headers);
  send(app, x, reply.status, reply.body);
}

const EXPOSED = [...RATE_LIMIT_HEADERS, 'Retry-After', 'Link', 'Location', 'Deprecation', 'Sunset', 'X-Request-Id', 'WWW-Authenticate'].join(', ');

/** Adds the CORS response headers when the request's Origin is allowed; false otherwise. */
function allowCors(x: Exchange, config: Config): boolean {
  const origin = x.req.headers.origin;
  if (origin === undefined) return false;
  const any = config.cors.origins.includes('*');
  if (!any && !config.cors.origins.includes(origin)) return false;
  x.headers['access-control-allow-origin'] = any ? '*' : origin;
  if (!any) x.headers.vary = 'Origin';
  x.headers['access-control-expose-headers'] = EXPOSED;
  return true;
}

/** Charges a request to its client address's keyless budget (`anonymous`). */
function chargeAddress(deps: AppDeps, x: Exchange, config: Config): LimitResult | Promise<LimitResult> {
  return deps.addressLimiter.take(clientAddress(x.req, config), config.anonymous);
}

/** Adds the limiter's headers; a refusal becomes the response. */
function applyLimit(x: Exchange, limit: LimitResult): void {
  setLimitHeaders(x.headers, limit);
  if (limit.outcome === 'ok') return;
  const message = limit.outcome === 'temporarily_banned'
    ? `Too many requests after 429 responses: temporarily banned; retry after ${limit.retryAfter} s.`
    : `Rate limit exceeded; retry after ${limit.retryAfter} s.`;
  throw new ApiError(limit.outcome satisfies ErrorCode, message);
}

function addDeprecation(app: Instance, x: Exchange, successor: string, sunset: string): void {
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

/** Turns any failure into an Error body; only unexpected ones are 500s, and logged. */
function fail(app: Instance, x: Exchange, err: unknown): void {
  const deps = app.deps;
  if (x.res.headersSent) {
    deps.logger.log('error', 'failure after the response started', { reqId: x.reqId, err: String(err) });
    x.res.destroy();
    return;
  }
  let error: ApiError;
  if (err instanceof ApiError) {
    error = err;
  } else if (err instanceof StoreUnavailableError) {
    error = new ApiError('service_unavailable', 'The store cannot write right now; nothing was added. Retry later.');
    x.headers['retry-after'] = '5';
    if (err instanceof StoreBusyError) logBusy(app);
    else deps.logger.log('error', 'store unavailable', { reqId: x.reqId, err: err.message });
  } else if (err instanceof StoreInputError) {
    // The store refused input it cannot honour (seed ids): the client's request, not a fault.
    error = new ApiError('invalid_request', err.message);
  } else {
    error = new ApiError('internal_error', `Internal error; the request changed nothing (request id ${x.reqId}).`);
    deps.logger.log('error', 'unexpected failure', { reqId: x.reqId, err: err instanceof Error ? (err.stack ?? err.message) : String(err) });
  }
  if (error.headers) Object.assign(x.headers, error.headers);
  if (x.req.headers.expect !== undefined && !x.req.readableDidRead) {
    // Decided once the bytes already received are parsed: see answerAwaitingContinue.
    if (awaitsContinue(x.req)) {
      setImmediate(answerAwaitingContinue, app, x, error);
      return;
    }
    sendContinue(x.req, x.res);
  }
  const body = error.body;
  // A 413 while the upload is still arriving waits for the rest of it (discarded, bounded),
  // unless the announced length is beyond what would be drained anyway.
  const announced = Number(x.req.headers['content-length'] ?? 0);
  if (error instanceof BodyTooLarge && !x.req.complete && !(announced > DRAIN_CAP_BYTES)) {
    discardThen(x, () => sendOrAbandon(app, x, error.status, body));
  } else {
    if (error instanceof BodyTooLarge && !x.req.complete) x.headers.connection = 'close';
    sendOrAbandon(app, x, error.status, body);
  }
}

/**
 * fail()'s way out, which must not throw: a response node refuses to write (writeHead throws
 * on a header value outside Latin-1, say) would otherwise escape the request, and the
 * process. Such a request gets no answer: its connection is closed, and the failure logged.
 */
function sendOrAbandon(app: Instance, x: Exchange, status: number, body: string): void {
  try {
    send(app, x, status, body);
  } catch (err) {
    app.deps.logger.log('error', 'the response could not be written; connection closed', {
      reqId: x.reqId, status, err: err instanceof Error ? err.message : String(err),
    });
    x.res.destroy();
  }
}

/**
 * An answer given before the request's body was read (401, 404, 405, 429, a GET with a
 * body, ...): after it node reads and discards the rest of the body, however long. The
 * 413's cap holds for them too: an announced body past DRAIN_CAP_BYTES gets its answer
 * and a close; a chunked one is cut once DRAIN_CAP_BYTES have been discarded. A body within
 * the cap is still discarded, so the client reads its answer rather than a reset.
 */
function boundUnreadBody(x: Exchange): void {
  const req = x.req;
  if (req.complete || x.headers.connection === 'close') return;
  const length = req.headers['content-length'];
  if (length !== undefined) {
    if (Number(length) > DRAIN_CAP_BYTES) x.headers.connection = 'close';
    return;
  }
  const socket = req.socket;
  let drained = 0;
  req.on('data', (chunk: Buffer) => {
    drained += chunk.length;
    if (drained > DRAIN_CAP_BYTES) socket.destroy();
  });
  req.resume();
}

/**
 * A full write queue refuses creates by the thousand under overload: one log line a second
 * says how many, instead of one line each.
 */
function logBusy(app: Instance): void {
  const busy = app.busy;
  busy.refused++;
  const now = app.deps.clock.monotonic();
  if (now - busy.loggedAt < 1000) return;
  app.deps.logger.log('warn', 'store write queue full; creates answered 503', { refused: busy.refused });
  busy.refused = 0;
  busy.loggedAt = now;
}

/**
 * The rest of an oversized upload is read and thrown away before the 413 is sent: a server
 * that answers and closes while the client is still sending makes the client's kernel reset
 * the connection, and the client may never read the answer (even more so when it asked for
 * Connection: close). Past DRAIN_CAP_BYTES it answers at once and closes the connection.
 */
function discardThen(x: Exchange, respond: () => void): void {
  const socket = x.req.socket; // req.socket is null once the request is destroyed
  let drained = 0;
  let answered = false;
  const answer = (): void => {
    if (answered) return;
    answered = true;
    clearTimeout(timer);
    respond();
  };
  // A client that stops sending mid-upload gets its answer after DRAIN_WAIT_MS all the same.
  const timer = setTimeout(() => {
    x.headers.connection = 'close';
    answer();
  }, DRAIN_WAIT_MS);
  x.req.on('data', (chunk: Buffer) => {
    drained += chunk.length;
    if (drained > DRAIN_CAP_BYTES && !answered) {
      x.headers.connection = 'close';
      answer();
    }
  });
  x.req.on('end', answer);
  x.req.on('error', () => socket.destroy());
  x.req.resume();
}

/** The one exit: every response of the service is written here, with writeHead and end once. */
function send(app: Instance, x: Exchange, status: number, body: string | Buffer | undefined): void {
  const headers = x.headers;
  headers['x-request-id'] = x.reqId;
  if (body !== undefined) {
    headers['content-type'] = JSON_TYPE;
    headers['content-length'] = String(typeof body === 'string' ? Buffer.byteLength(body) : body.length);
  }
  headers['cache-control'] = 'no-store';
  const rh = x.req.headers;
  if (rh['content-length'] !== undefined || rh['transfer-encoding'] !== undefined) boundUnreadBody(x);
  x.res.writeHead(status, headers);
  x.res.end(body);
  if (!app.accessLog) return;
  app.deps.logger.log('info', 'request completed', {
    reqId: x.reqId,
    req: { method: x.req.method, url: x.req.url },
    res: { statusCode: status },
    responseTime: Math.round((app.deps.clock.monotonic() - x.started) * 100) / 100,
    key: x.keyName,
  });
}

/**
 * RFC 9112 section 3.2: an HTTP/1.1 request without a Host header field, or with more than
 * one, is answered 400. (node:http checks the first itself unless requireHostHeader is off,
 * but answers without an Error body.)
 */
function checkHost(req: IncomingMessage): string | undefined {
  if (req.httpVersionMajor !== 1 || req.httpVersionMinor === 0) return undefined;
  if (req.headers.host === undefined) return 'The Host header is required in HTTP/1.1.';
  const raw = req.rawHeaders;
  let seen = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    if (isHost(name) && ++seen > 1) return 'The Host header must be given only once.';
  }
  return undefined;
}

/** Case-insensitive "host" without allocating a lowercased copy (this runs on every request). */
function isHost(name: string): boolean {
  return name.length === 4 && (name === 'Host' || name === 'host' || name.toLowerCase() === 'host');
}

/** A request that asked for 100 Continue, and neither was sent one nor has sent any body. */
function awaitsContinue(req: IncomingMessage): boolean {
  return req.headers.expect !== undefined && !req.complete && !req.readableDidRead && req.readableLength === 0;
}

/**
 * RFC 9110 section 10.1.1. A client that waits for a 100 Continue before sending its body
 * gets this final answer instead, at once (not after waiting for a body that will not come),
 * and node:http closes the connection after it, since the client may or may not send that
 * body later. A client that sent its body without waiting (parsed by now, with any request
 * pipelined behind it) is sent the 100 after all, which keeps its connection and the
 * requests behind it answered, and is then answered like any other request.
 */
function answerAwaitingContinue(app: Instance, x: Exchange, error: ApiError): void {
  if (awaitsContinue(x.req)) send(app, x, error.status, error.body);
  else fail(app, x, error);
}

/**
 * llhttp accepts the versions 0.9, 1.0, 1.1 and 2.0 in a request line and node:http would serve
 * them all as HTTP/1.1. HTTP/2 is never named in a request line (RFC 9113 section 3: it
 * starts with a preface, after ALPN or prior knowledge), and an HTTP/0.9 request has no version:
 * both are malformed HTTP/1.x. The connection closes: its framing cannot be trusted.
 */
function unsupportedVersion(x: Exchange): ApiError {
  x.headers.connection = 'close';
  return new ApiError('invalid_request', `HTTP/${x.req.httpVersion} is not supported: this server speaks HTTP/1.1 and HTTP/1.0.`);
}

const SLASH = 47;
const ABSOLUTE_FORM = /^https?:\/\/[^/?#]*/i;

/**
 * The origin-form (path and query) of a request target in absolute-form, which node:http
 * passes on as it is; any other target is returned unchanged (and matches no route). The
 * base URL of links still comes from Host, which a client must send identical to the
 * target's authority (RFC 9112 section 3.2).
 */
function originForm(target: string): string {
  const authority = ABSOLUTE_FORM.exec(target);
  if (authority === null) return target;
  const rest = target.slice(authority[0].length);
  return rest === '' || rest.charCodeAt(0) !== SLASH ? `/${rest}` : rest;
}

function requestId(req: IncomingMessage, next: () => string): string {
  const given = req.headers['x-request-id'];
  return typeof given === 'string' && SANE_REQUEST_ID.test(given) ? given : next();
}

/**
 * Request ids: a random prefix per app instance and a counter, unique across restarts and
 * instances without the cost of a UUID per request.
 */
function requestIds(): () => string {
  const prefix = randomUUID().slice(0, 8);
  let n = 0;
  return () => `${prefix}-${(++n).toString(36)}`;
}

function base(app: Instance, req: IncomingMessage): string {
  if (app.deps.publicBase) return app.deps.publicBase;
  const host = req.headers.host;
  if (host !== undefined) {
    const known = app.bases.get(host);
    if (known !== undefined) return known;
    if (SANE_HOST.test(host)) {
      if (app.bases.size >= 64) app.bases.clear(); // Host values are client-chosen: stay bounded
      const url = `http://${host}/v1`;
      app.bases.set(host, url);
      return url;
    }
  }
  const addr = req.socket.localAddress ?? '127.0.0.1';
  return `http://${addr.includes(':') ? `[${addr}]` : addr}:${req.socket.localPort ?? 0}/v1`;
}

/**
 * The address a keyless request is limited by: the socket's peer, or with trustProxy the
 * last X-Forwarded-For hop (the one our own proxy appended) when it is an IP address (see
 * forwarded.ts). IPv6 clients own whole /64s, so they are limited per /64.
 */
function clientAddress(req: IncomingMessage, config: Config): string {
  let addr = req.socket.remoteAddress ?? 'unknown';
  if (config.trustProxy) {
    const forwarded = forwardedAddress(req.headers['x-forwarded-for']);
    if (forwarded !== undefined) addr = forwarded;
  }
  if (addr.startsWith('::ffff:')) addr = addr.slice(7);
  if (addr.includes(':')) return `ip6:${ipv6Prefix64(addr)}`;
  return `ip:${addr}`;
}

function ipv6Prefix64(addr: string): string {
  const [head = '', tail] = addr.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups = tail === undefined ? left : [...left, ...Array<string>(Math.max(0, 8 - left.length - right.length)).fill('0'), ...right];
  return groups.slice(0, 4).map((g) => g.toLowerCase().replace(/^0+(?=.)/, '')).join(':');
}
