// The HTTP layer: one request lifecycle, and one function (`send`) that every response,
// errors included, passes through. The phases, in order, and the statuses they answer:
//   0. version, Host (RFC 9112)         400 invalid_request: HTTP/2.0 or 0.9 request line;
//                                       Host missing or repeated in HTTP/1.1; Authorization
//                                       repeated; Transfer-Encoding in HTTP/1.0
//      (an absolute-form target, http://host/path, is reduced to its path first)
//   1. /healthz                         200 (no key, no limit); 405 for methods but GET, HEAD
//      /metrics (with "metrics": true)  200 Prometheus text (no key, no limit, not counted); 405
//   2. route match (kept for phase 5)   -- deprecated routes get their headers from here on
//   3. authentication                   key, or the per-address budget of keyless requests
//   4. rate limit                       429 rate_limited / temporarily_banned
//      (CORS preflights are answered between 2 and 3, 204, before authentication;
//      /__admin/*, with an admin key in the config, goes to admin.ts here: admin key or 401)
//   5. 401 / 417 / 404 / 405            unauthorized, expectation_failed, not_found,
//                                       method_not_allowed (+ Allow)
//   6. handler                          400, 413, 415, 501 -> 200, 201, 404, 501, 503
//      (unless a fault set through /__admin/faults answers 429/503 or delays it first)
//      (100 Continue goes out only here, once a body is wanted: see readJsonBody)
// Requests node:http cannot parse, and CONNECT, are answered in client-errors.ts (400/408/431/405).
import type { RouteSpec, HandlerContext, Reply } from '../api/index.js';
import { ADMIN_ROUTES, Faults, PageCache, faultError } from '../api/index.js';
import type { Config } from '../config/index.js';
import { ApiError, clip } from '../core/index.js';
import type { LimitResult } from '../limits/index.js';
import { hasPageVersion } from '../store/index.js';
import { authenticate, challenge, unauthorized, type AuthResult } from './auth.js';
import { PendingBodies } from './body.js';
import { applyLimit, chargeAddress } from './charge.js';
import { addPreflightHeaders, allowCors } from './cors.js';
import { ADMIN_PREFIX, handleAdmin } from './admin.js';
import { addDeprecation } from './deprecation.js';
import type { AppDeps, Exchange, Instance, RequestListener } from './exchange.js';
import { fail } from './failure.js';
import { answerMetrics } from './metrics-route.js';
import { parseQuery } from './query.js';
import { SLASH, base, checkRequestFields, originForm, requestId, requestIds, unsupportedVersion } from './request.js';
import { Router, type Match } from './router.js';
import { send } from './send.js';

export type { AppDeps, RequestListener } from './exchange.js';

export function createApp(deps: AppDeps): RequestListener {
  const router = new Router<RouteSpec>();
  for (const route of deps.routes) router.add(route.method, `/v1${route.path}`, route);
  const admin = new Router<(typeof ADMIN_ROUTES)[number]>();
  if (deps.admin !== undefined) for (const route of ADMIN_ROUTES) admin.add(route.method, `${ADMIN_PREFIX}${route.path.slice(1)}`, route);
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
    metrics: deps.metrics,
    faults: deps.admin?.faults ?? new Faults(),
    admin,
    operations: deps.routes.map((r) => r.operationId),
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
      error: undefined,
      operation: undefined,
    };
    handle(app, x)?.catch((err: unknown) => fail(app, x, err));
  };
}

/**
 * Synchronous until a limiter, the store or a handler hands back a promise (with the
 * in-memory ones, only createPet does), to spare the hot reads.
 */
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

    // Phase 0, malformed HTTP that node's parser lets through (see answerClientError in client-errors.ts).
    if (x.req.httpVersionMajor !== 1) throw unsupportedVersion(x);
    const fieldProblem = checkRequestFields(x.req);
    if (fieldProblem !== undefined) throw fieldProblem;

    if (path === '/healthz') {
      if (method !== 'GET' && method !== 'HEAD') {
        x.headers.allow = 'GET, HEAD';
        throw new ApiError('method_not_allowed', `Method ${clip(method)} is not allowed on /healthz; allowed: GET, HEAD.`);
      }
      x.operation = 'healthz';
      send(app, x, 200, '{"status":"ok"}');
      return undefined;
    }
    // Outside /v1, no key, no limit, and not counted itself.
    if (app.metrics !== undefined && path === '/metrics') return answerMetrics(app, x, method);

    const match = router.match(method, path);
    const route = match.kind === 'found' ? match.handler : undefined;
    x.operation = route?.operationId;
    // Every response of a deprecated operation carries the headers, errors included.
    if (route?.deprecated) addDeprecation(app, x, route.deprecated.successor, route.deprecated.sunset);

    const config = deps.config();
    // Only while the config names an admin key: otherwise /__admin is an unknown path like any other.
    if (config.admin !== undefined && path.startsWith(ADMIN_PREFIX)) return handleAdmin(app, x, config, method, path);
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
      const result = authenticate(x.req.headers.authorization, config.keys);
      if (result.kind === 'key') {
        auth = result;
        x.keyName = result.entry.name;
        limit = deps.keyLimiter.take(result.entry.digest, result.entry.limits);
      } else {
        // A public route takes a key that is not valid as no key: served, on the address's budget.
        if (route?.auth !== 'optional') auth = result;
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
    applyLimit(app, x, limit);
    if (auth !== undefined && auth.kind !== 'key') {
      x.headers['www-authenticate'] = challenge(auth);
      app.metrics?.unauthorized(auth.kind === 'missing' ? 'missing_key' : auth.kind === 'invalid' ? 'invalid_key' : 'other_scheme');
      throw unauthorized(auth);
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
    const scope = auth?.kind === 'key' ? auth.entry.digest : undefined;
    if (app.faults.armed !== 0) {
      const fault = app.faults.take(match.handler.operationId);
      if (fault?.status !== undefined) throw faultError(fault);
      if (fault !== undefined) return app.faults.wait(fault.delayMs ?? 0).then(() => dispatch(app, x, match.handler, match.params, config, url, q, scope));
    }
    return dispatch(app, x, match.handler, match.params, config, url, q, scope);
  } catch (err) {
    fail(app, x, err);
    return undefined;
  }
}

/** Phase 6: the handler's answer, sent. */
function dispatch(
  app: Instance, x: Exchange, route: RouteSpec, params: Readonly<Record<string, string>>, config: Config, url: string, q: number,
  scope: string | undefined,
): Promise<void> | undefined {
  const ctx: HandlerContext = {
    req: x.req,
    res: x.res,
    params,
    query: parseQuery(q === -1 ? '' : url.slice(q + 1)),
    store: app.deps.store,
    maxBodyBytes: config.maxBodyBytes,
    base: base(app, x.req),
    config,
    pages: app.pages,
    bodies: app.bodies,
    scope,
  };
  const reply = route.handler(ctx);
  if (reply instanceof Promise) return reply.then((r) => (r instanceof ApiError ? fail(app, x, r) : sendReply(app, x, r)));
  if (reply instanceof ApiError) fail(app, x, reply);
  else sendReply(app, x, reply);
  return undefined;
}

/** A CORS preflight's 204, charged to the client address like a keyless request. */
function answerPreflight(app: Instance, x: Exchange, limit: LimitResult, allow: string): void {
  applyLimit(app, x, limit);
  addPreflightHeaders(x, allow);
  send(app, x, 204, undefined);
}

/** Sends a handler's reply with the headers gathered so far. */
function sendReply(app: Instance, x: Exchange, reply: Reply): void {
  if (reply.headers) Object.assign(x.headers, reply.headers);
  send(app, x, reply.status, reply.body);
}
