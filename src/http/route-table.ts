// The route table: every path the service answers, as data. The /v1 operations (the API's
// RouteSpecs, /v1/openapi.json among them), /healthz, /metrics (only with metrics on) and
// every /__admin operation (only while the config names an admin key), plus what a path
// that is not in the table, or a method that is not on its path, is answered with. Built at
// start and again for every config a reload brings; lifecycle.ts gives each route its phases.
import { ADMIN_ROUTES, type AdminRoute } from '../admin/index.js';
import type { Reply, RouteSpec } from '../api/index.js';
import type { Config } from '../config/index.js';
import { ApiError, clip } from '../core/index.js';
import { EXPOSITION_CONTENT_TYPE, mergeSnapshots, render } from '../metrics/index.js';
import type { AppDeps } from './deps.js';
import { Router } from './router.js';

/**
 * Who may call a route. 'none': anyone, charged to the client address; 'key': an API key
 * (without one: 401); 'optional': anyone, a valid key charged to its own budget; 'admin':
 * the config's admin key, not charged (without it: the 401 of any path, charged to the
 * address); 'open': anyone, charged to nothing (health checks and scrapes).
 */
export type RouteAuth = 'none' | 'key' | 'optional' | 'admin' | 'open';

/** Where a route belongs: what its refusals say, and which of the shared phases it has. */
export type RouteGroup = 'api' | 'meta' | 'admin';

/** What a route does once its phases have passed: the handler, or the refusal of a 404/405. */
export type Action =
  | { readonly kind: 'api'; readonly spec: RouteSpec }
  | { readonly kind: 'admin'; readonly spec: AdminRoute }
  | { readonly kind: 'fixed'; readonly reply: (method: string) => Reply | Promise<Reply> }
  | { readonly kind: 'refuse'; readonly error: (method: string, path: string) => ApiError; readonly allow?: string };

export interface TableRoute {
  /** For metrics and faults; undefined for the 404 and 405 answers. */
  readonly operationId: string | undefined;
  readonly group: RouteGroup;
  readonly auth: RouteAuth;
  /** The deprecation headers go on every answer of this route, errors included. */
  readonly deprecated?: { readonly sunset: string; readonly successor: string };
  /** A JSON body is read before the handler: with the API's bound, or the larger admin one. */
  readonly body: 'api' | 'admin' | undefined;
  /** The Idempotency-Key header is read and checked before the body. */
  readonly idempotencyKey: boolean;
  /** A CORS preflight (OPTIONS) is answered here: the 405 of an API path. */
  readonly preflight: boolean;
  /** The answer is neither counted nor logged (the scrape itself). */
  readonly quiet: boolean;
  readonly action: Action;
}

/** A route with its phases (up to its handler) and what runs after its handler. */
export interface CompiledRoute<P, A = unknown> {
  readonly route: TableRoute;
  readonly phases: readonly P[];
  readonly outbound: A;
}

export interface RouteTable<P = unknown, A = unknown> {
  readonly config: Config;
  /** Moves on with every config: what the per-connection caches are checked against. */
  readonly generation: number;
  readonly router: Router<CompiledRoute<P, A>>;
  /** A path in no route. */
  readonly notFound: CompiledRoute<P, A>;
  /** A path under /__admin/ in no admin route, while an admin key is configured. */
  readonly adminNotFound: CompiledRoute<P, A> | undefined;
}

export const ADMIN_PREFIX = '/__admin/';

/** The routes of the table for this config, in declaration order, with their full paths. */
export function tableRoutes(deps: AppDeps, config: Config): Array<{ method: string; path: string; route: TableRoute }> {
  const out: Array<{ method: string; path: string; route: TableRoute }> = [];
  for (const spec of deps.routes) {
    out.push({
      method: spec.method,
      path: `/v1${spec.path}`,
      route: {
        operationId: spec.operationId,
        group: 'api',
        auth: spec.auth,
        deprecated: spec.deprecated,
        body: spec.requestBody === undefined ? undefined : 'api',
        idempotencyKey: spec.parameters.some((p) => p.in === 'header' && p.name.toLowerCase() === 'idempotency-key'),
        preflight: false,
        quiet: false,
        action: { kind: 'api', spec },
      },
    });
  }
  out.push({ method: 'GET', path: '/healthz', route: meta('healthz', false, () => HEALTHY) });
  // Readiness for balancers: /healthz says the process lives, /readyz whether to send it traffic.
  const readiness = (): string | undefined => deps.readiness?.() ?? (deps.store.reachable === false ? STORE_AWAY : undefined);
  out.push({ method: 'GET', path: '/readyz', route: meta('readyz', false, () => readyReply(readiness())) });
  if (deps.metrics !== undefined) {
    const scrape = deps.scrape ?? defaultScrape(deps);
    // Outside /v1, no key, no limit, and not counted itself: a scrape every few seconds does
    // not show up in the figures it reports.
    out.push({ method: 'GET', path: '/metrics', route: meta(undefined, true, () => scrapeReply(scrape())) });
  }
  // Only while the config names an admin key: otherwise /__admin is an unknown path like any other.
  if (config.admin !== undefined && deps.admin !== undefined) {
    for (const spec of ADMIN_ROUTES) {
      out.push({
        method: spec.method,
        path: `${ADMIN_PREFIX}${spec.path.slice(1)}`,
        route: {
          operationId: spec.operationId, group: 'admin', auth: 'admin', body: spec.body === true ? 'admin' : undefined,
          idempotencyKey: false, preflight: false, quiet: false, action: { kind: 'admin', spec },
        },
      });
    }
  }
  return out;
}

const HEALTHY: Reply = { status: 200, body: '{"status":"ok"}' };
const READY: Reply = { status: 200, body: '{"status":"ready"}' };
const STORE_AWAY = 'The store cannot be reached right now; this instance answers 503 to reads and creates until it can.';

function readyReply(reason: string | undefined): Reply {
  if (reason === undefined) return READY;
  return {
    status: 503,
    body: JSON.stringify({ code: 'service_unavailable', message: reason, status: 503 }),
    headers: { 'retry-after': '1', 'cache-control': 'no-store' },
  };
}

function meta(operationId: string | undefined, quiet: boolean, reply: () => Reply | Promise<Reply>): TableRoute {
  return {
    operationId, group: 'meta', auth: 'open', body: undefined, idempotencyKey: false, preflight: false, quiet,
    action: { kind: 'fixed', reply },
  };
}

function scrapeReply(text: string | Promise<string>): Reply | Promise<Reply> {
  if (typeof text !== 'string') return text.then(scrapeReply);
  return { status: 200, body: text, contentType: EXPOSITION_CONTENT_TYPE };
}

/** This process's figures; with workers, the others' summed in, so one scrape sees the whole service. */
function defaultScrape(deps: AppDeps): () => string | Promise<string> {
  const recorder = deps.metrics;
  if (recorder === undefined) throw new Error('metrics are off');
  const peers = deps.peerMetrics;
  if (peers === undefined) return () => render(recorder.snapshot());
  return () => {
    const own = recorder.snapshot();
    return peers().then((others) => render(mergeSnapshots([own, ...others])));
  };
}

/** The 405 of a path: after the checks of its group (an API path's needs a key, as its routes do). */
export function methodNotAllowed(group: RouteGroup, path: string, allow: string): TableRoute {
  const error = group === 'meta'
    ? (method: string) => path === '/metrics'
      ? new ApiError('method_not_allowed', 'Method not allowed on /metrics; allowed: GET, HEAD.')
      : new ApiError('method_not_allowed', `Method ${clip(method)} is not allowed on ${path}; allowed: ${allow}.`)
    : (method: string, requested: string) => new ApiError('method_not_allowed', `Method ${clip(method)} is not allowed on ${clip(requested)}; allowed: ${allow}.`);
  return {
    operationId: undefined, group, auth: group === 'meta' ? 'open' : group === 'admin' ? 'admin' : 'key', body: undefined,
    idempotencyKey: false, preflight: group === 'api', quiet: false, action: { kind: 'refuse', error, allow },
  };
}

/** A path in no route: an API path's 404, after a key is checked (a 401 says nothing of which paths exist). */
export const NOT_FOUND: TableRoute = {
  operationId: undefined, group: 'api', auth: 'key', body: undefined, idempotencyKey: false, preflight: false, quiet: false,
  action: { kind: 'refuse', error: (method, path) => new ApiError('not_found', `No route for ${method} ${clip(path)}.`) },
};

/** A path under /__admin/ in no admin route: its 404 only to the admin key. */
export const ADMIN_NOT_FOUND: TableRoute = {
  operationId: undefined, group: 'admin', auth: 'admin', body: undefined, idempotencyKey: false, preflight: false, quiet: false,
  action: { kind: 'refuse', error: (_method, path) => new ApiError('not_found', `No admin operation at ${clip(path)}.`) },
};
