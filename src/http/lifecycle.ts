// The request lifecycle, as data. Every request runs the same way:
//
//   frame checks -> route match -> the route's phases, in order -> send (the one exit)
//
// Each route of the table (route-table.ts) gets its list of phases when the app starts and
// again for every config a reload brings; a feature that is off adds no phase, so it costs a
// request nothing. PHASES below lists them in the order they run, each with when a route has
// it and what it answers; the developer guide's tables are generated from it (npm run docs).
// Before them, the frame checks of every request answer 400: an HTTP/2.0 or 0.9 request line,
// Host missing or repeated (HTTP/1.1), Authorization repeated, Transfer-Encoding in HTTP/1.0
// (an absolute-form target is reduced to its path first). After the handler, outbound.ts.
//
// Requests node:http cannot parse, and CONNECT, are answered in client-errors.ts (400/408/431/405).
import { ADMIN_MAX_BODY_BYTES, Faults } from '../admin/index.js';
import type { Reply } from '../api/index.js';
import { PageCache, PetCache, idempotencyKeyOf } from '../api/index.js';
import type { Config } from '../config/index.js';
import { ApiError, clip } from '../core/index.js';
import type { LimitResult } from '../limits/index.js';
import { hasPageVersion } from '../store/index.js';
import { authenticateOn, challenge, isAdminKey, unauthorized } from './auth.js';
import { PendingBodies } from './body.js';
import { applyLimit, chargeAddress } from './charge.js';
import { addPreflightHeaders, allowCors } from './cors.js';
import { deprecationHeadersOf } from './deprecation.js';
import type { OrderedListener } from './connection/index.js';
import { Exchange, type AppDeps, type Instance, type Outbound, type RequestListener } from './exchange.js';
import { fail } from './failure.js';
import { faults, prefer } from './injected-faults.js';
import { withNamespaces } from './namespaces.js';
import { SLASH, checkRequestFields, originForm, requestId, requestIds, unsupportedVersion } from './request.js';
import {
  ADMIN_NOT_FOUND, ADMIN_PREFIX, NOT_FOUND, methodNotAllowed, tableRoutes, type CompiledRoute, type RouteTable, type TableRoute,
} from './route-table.js';
import { handlerOf } from './handlers.js';
import { DONE, baseOf, nextGeneration, type Phase, type Step } from './phase.js';
import { Router } from './router.js';
import { outboundNames, outboundOf } from './outbound.js';
import { sendReply } from './send.js';


/** A phase of the table below: its name, whether a route has it under a config, and what it answers or does. */
interface PhaseEntry {
  readonly name: string;
  readonly pick: (route: TableRoute, config: Config) => Phase | undefined;
  readonly does: string;
}

type Compiled = CompiledRoute<Phase, Outbound>;
type Table = RouteTable<Phase, Outbound>;

const when = (test: boolean, phase: Phase): Phase | undefined => (test ? phase : undefined);

/** The lifecycle: every phase a route may have, in the order they run. */
export const PHASES: readonly PhaseEntry[] = [
  {
    name: 'journal', pick: (r, c) => when(r.group === 'api' && c.admin !== undefined && c.admin.journal > 0, journal),
    does: 'marks a `/v1` request to be recorded in the journal once answered',
  },
  {
    name: 'deprecation', pick: (r) => (r.deprecated !== undefined ? deprecationOf(r) : undefined),
    does: 'the Deprecation, Sunset and Link headers, on every answer from here on (errors included)',
  },
  {
    name: 'cors', pick: (r, c) => when(r.group === 'api' && c.cors.origins.length > 0, r.preflight ? corsOrPreflightOf(r) : cors),
    does: 'the CORS headers for an allowed Origin; on a path\'s 405, a preflight\'s 204 (charged to the client address)',
  },
  {
    name: 'authenticate',
    pick: (r, c) => (r.auth === 'key' ? authenticateKey : r.auth === 'optional' ? authenticateOptional : r.auth === 'admin' && c.admin !== undefined ? authenticateAdmin : undefined),
    does: 'who is calling (remembered per connection)',
  },
  {
    name: 'charge', pick: (r) => (r.auth === 'open' ? undefined : r.auth === 'admin' ? chargeRefused : charge),
    does: '429 `rate_limited` / `temporarily_banned`; the rate-limit headers (on admin routes only a caller without the admin key is charged)',
  },
  { name: 'deny', pick: (r) => when(r.auth === 'key' || r.auth === 'admin', deny), does: '401 `unauthorized` (after the limiter, so a 401 carries the per-address budget\'s headers)' },
  { name: 'expect', pick: (r) => when(r.group === 'api', expect), does: '417 `expectation_failed`' },
  {
    name: 'prefer', pick: (r, c) => when(c.admin?.preferFaults === true && r.group === 'api' && r.action.kind === 'api', prefer),
    does: 'the request\'s own `Prefer: code=` (400..599), `delay=`, `fault=` (`admin.preferFaults`)',
  },
  {
    name: 'faults', pick: (r, c) => when(c.admin !== undefined && r.group === 'api' && r.action.kind === 'api', faults),
    does: '400..599, a delay or a broken connection set through `/__admin/faults` (a create is stored first)',
  },
  { name: 'idempotency', pick: (r) => when(r.idempotencyKey, idempotency), does: '400 for a bad or repeated `Idempotency-Key`, before the body is read' },
  { name: 'body', pick: (r) => when(r.body !== undefined, r.body === 'admin' ? adminBody : apiBody), does: '400, 413, 415, 501, 503; `100 Continue` goes out only here' },
  { name: 'handler', pick: (r) => handlerOf(r), does: 'the handler\'s answer, or the 404/405 of a path in no route' },
];

function compile(app: Instance, route: TableRoute, config: Config): Compiled {
  const phases: Phase[] = [];
  for (const entry of PHASES) {
    const phase = entry.pick(route, config);
    if (phase !== undefined) phases.push(phase);
  }
  return { route, phases, outbound: outboundOf(route, config, app.deps) };
}

/**
 * Every route under `config` with the names of its phases and of its steps after the handler
 * (outbound.ts), as the app builds them: the lifecycle as a table, for the documentation and
 * its tests. Method '(other)' is a path's 405; '* (any other path)' the 404 of a path in no
 * route; '* /__admin/(any other)' that of an admin path in no admin route.
 */
export function phaseTable(deps: AppDeps, config: Config): Array<{ method: string; path: string; phases: string[]; outbound: string[] }> {
  const row = (method: string, path: string, route: TableRoute) => ({
    method, path, phases: PHASES.filter((p) => p.pick(route, config) !== undefined).map((p) => p.name), outbound: outboundNames(route, config, deps),
  });
  const out = tableRoutes(deps, config).map(({ method, path, route }) => row(method, path, route));
  const groups = new Map(tableRoutes(deps, config).map(({ path, route }) => [path, route.group]));
  for (const [path, group] of groups) out.push(row('(other)', path, methodNotAllowed(group, path, '')));
  out.push(row('*', '(any other path)', NOT_FOUND));
  if (config.admin !== undefined && deps.admin !== undefined) out.push(row('*', `${ADMIN_PREFIX}(any other)`, ADMIN_NOT_FOUND));
  return out;
}

/** The table and every route's phases for `config`. */
function buildTable(app: Instance, config: Config, generation: number): Table {
  // (Each route's phases depend on the route and the config only.)
  const router = new Router<Compiled>();
  const groups = new Map<string, TableRoute['group']>();
  for (const { method, path, route } of tableRoutes(app.deps, config)) {
    router.add(method, path, compile(app, route, config));
    groups.set(path, route.group);
  }
  for (const { template, allow } of router.paths()) {
    router.otherwise(template, compile(app, methodNotAllowed(groups.get(template) ?? 'api', template, allow), config));
  }
  return {
    config,
    generation,
    router,
    notFound: compile(app, NOT_FOUND, config),
    adminNotFound: config.admin === undefined || app.deps.admin === undefined ? undefined : compile(app, ADMIN_NOT_FOUND, config),
  };
}

export function createApp(deps: AppDeps): OrderedListener {
  const app: Instance = {
    deps,
    table: undefined as unknown as Table,
    // Pages and pets are cached only for a store that offers a version to check them against.
    pages: hasPageVersion(deps.store) ? { cache: new PageCache(), version: deps.store } : undefined,
    pets: hasPageVersion(deps.store) ? new PetCache() : undefined,
    bodies: new PendingBodies(),
    bases: new Map(),
    lastBase: undefined,
    deprecations: new Map(),
    busy: { refused: 0, loggedAt: -Infinity },
    metrics: deps.metrics,
    faults: deps.admin?.faults ?? new Faults(),
    operations: deps.routes.map((r) => r.operationId),
  };
  app.table = buildTable(app, deps.config(), nextGeneration());
  const ids = requestIds();
  const clock = deps.clock;

  const listener: RequestListener = (req, res) => {
    // The config snapshot of this request, taken once; a new one (a reload) rebuilds the
    // routes' phases and moves the generation the per-connection caches are checked against.
    const config = deps.config();
    let table = app.table as Table;
    if (table.config !== config) table = app.table = buildTable(app, config, nextGeneration());
    const x = new Exchange(req, res, clock.monotonic(), requestId(req, ids), config, table.notFound.outbound);
    dispatch(app, x, table)?.catch((err: unknown) => fail(app, x, err));
  };
  // While a fault is armed, an answer may end its connection (truncated, reset, empty): the
  // requests pipelined behind each request wait for its answer, and are not handled at all
  // when it ended the connection (a create would be stored without its 201).
  const faults = app.faults;
  const oneAtATime = (): boolean => faults.armed > 0;
  // Namespaces: a listener in front, only while there may be some (namespaces.ts); a request
  // into a namespace goes by that namespace's faults too.
  if (deps.namespaces === undefined) return Object.assign(listener, { oneAtATime });
  const front = withNamespaces(listener, deps, deps.namespaces, createApp, (req, res, error) => {
    fail(app, new Exchange(req, res, clock.monotonic(), requestId(req, ids), deps.config(), (app.table as Table).notFound.outbound), error);
  });
  return Object.assign(front, { oneAtATime: (req: Parameters<RequestListener>[0]): boolean => oneAtATime() || front.faultsArmed(req) });
}

/** Frame checks, then the matched route's phases. */
function dispatch(app: Instance, x: Exchange, table: Table): Promise<void> | undefined {
  let compiled: Compiled;
  try {
    const req = x.req;
    let url = req.url ?? '/';
    // RFC 9112 section 3.2.2: a server must accept the absolute-form (http://host/v1/pets) too.
    if (url.charCodeAt(0) !== SLASH) url = originForm(url);
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    x.path = path;
    if (q !== -1) x.rawQuery = url.slice(q + 1);
    // Malformed HTTP that node's parser lets through (see answerClientError in client-errors.ts).
    if (req.httpVersionMajor !== 1) throw unsupportedVersion(x);
    const fieldProblem = checkRequestFields(req);
    if (fieldProblem !== undefined) throw fieldProblem;

    const match = table.router.match(req.method ?? 'GET', path);
    if (match.kind === 'found') {
      compiled = match.handler;
      x.params = match.params;
    } else if (match.kind === 'method_not_allowed' && match.handler !== undefined) {
      compiled = match.handler;
    } else {
      compiled = table.adminNotFound !== undefined && path.startsWith(ADMIN_PREFIX) ? table.adminNotFound : table.notFound;
    }
    x.route = compiled.route;
    x.outbound = compiled.outbound;
    x.operation = compiled.route.operationId;
  } catch (err) {
    fail(app, x, err);
    return undefined;
  }
  return run(app, x, compiled.phases, 0);
}

/** Runs phases from `from` on; catches its own errors (they become the answer). */
function run(app: Instance, x: Exchange, phases: readonly Phase[], from: number): Promise<void> | undefined {
  // Errors are caught here rather than by the caller: V8 counts a function's calls toward
  // optimizing it at its returns, so a function that mostly exits by throw (every 400 and
  // 401) would stay interpreted.
  try {
    for (let i = from; i < phases.length; i++) {
      const step = (phases[i] as Phase)(app, x);
      if (step === undefined) continue;
      if (step === DONE) return undefined;
      const next = i + 1;
      return step.then(
        (settled) => (settled === DONE || next === phases.length ? undefined : run(app, x, phases, next)),
        (err: unknown) => fail(app, x, err),
      );
    }
  } catch (err) {
    fail(app, x, err);
  }
  return undefined;
}


// ---- The phases ----

/** A /v1 request is recorded in the journal when answered (send.ts); other paths are not. */
function journal(app: Instance, x: Exchange): Step {
  if (app.deps.journal !== undefined && (x.path.startsWith('/v1/') || x.path === '/v1')) x.journal = true;
  return undefined;
}

/** Every answer of a deprecated operation carries its headers, errors included. */
function deprecationOf(route: TableRoute): Phase {
  const headersOf = deprecationHeadersOf(route);
  return (app, x) => {
    x.deprecated = headersOf(app, baseOf(app, x));
    return undefined;
  };
}

function cors(_app: Instance, x: Exchange): Step {
  allowCors(x, x.config);
  return undefined;
}

/** A CORS preflight (Fetch standard) carries no credentials: answered before authentication. */
function corsOrPreflightOf(route: TableRoute): Phase {
  const allow = route.action.kind === 'refuse' ? route.action.allow ?? '' : '';
  return (app, x) => {
    if (!allowCors(x, x.config) || x.req.method !== 'OPTIONS' || x.req.headers['access-control-request-method'] === undefined) return undefined;
    const answer = (limit: LimitResult): typeof DONE => {
      applyLimit(app, x, limit);
      addPreflightHeaders(x, allow);
      sendReply(app, x, PREFLIGHT);
      return DONE;
    };
    const limit = chargeAddress(app.deps, x, x.config);
    return limit instanceof Promise ? limit.then(answer) : answer(limit);
  };
}
const PREFLIGHT: Reply = { status: 204, body: undefined };

/**
 * Who sent the request, by its bearer key: remembered per connection (auth.ts). A failure is
 * refused after the limiter (deny): keyless and wrong-key requests share a small per-address
 * budget, so keys cannot be guessed at speed; their 401 carries that budget's headers.
 */
function authenticateKey(app: Instance, x: Exchange): Step {
  const { result } = authenticateOn(x.req.socket, x.req.headers.authorization, app.table.generation, x.config.keys);
  x.auth = result;
  if (result.kind === 'key') x.keyName = result.entry.name;
  return undefined;
}

/** A public route takes a key that is not valid as no key: served, on the address's budget. */
function authenticateOptional(app: Instance, x: Exchange): Step {
  const { result } = authenticateOn(x.req.socket, x.req.headers.authorization, app.table.generation, x.config.keys);
  if (result.kind === 'key') {
    x.auth = result;
    x.keyName = result.entry.name;
  }
  return undefined;
}

/** The admin key, or the failure answered 401 after the address is charged. */
function authenticateAdmin(app: Instance, x: Exchange): Step {
  const admin = x.config.admin as { readonly digest: string };
  const remembered = authenticateOn(x.req.socket, x.req.headers.authorization, app.table.generation, x.config.keys);
  x.auth = isAdminKey(remembered, admin.digest);
  return undefined;
}

/** Charges a key's budget, or the client address's one; a refusal is the answer. */
function charge(app: Instance, x: Exchange): Step {
  const auth = x.auth;
  // Charged at the request's one reading of the clock, taken when it arrived.
  const limit = auth?.kind === 'key' ? app.deps.keyLimiter.take(auth.entry.digest, auth.entry.limits, x.started) : chargeAddress(app.deps, x, x.config);
  // Only a limiter kept elsewhere answers with a promise: the in-memory one stays synchronous.
  if (limit instanceof Promise) return limit.then((l) => applyLimit(app, x, l));
  applyLimit(app, x, limit);
  return undefined;
}

/** The admin routes charge only a caller without the admin key (to the address's budget). */
function chargeRefused(app: Instance, x: Exchange): Step {
  return x.auth === undefined ? undefined : charge(app, x);
}

/** 401, the same on every path (a 401 does not tell an outsider that admin is enabled). */
function deny(app: Instance, x: Exchange): Step {
  const auth = x.auth;
  if (auth === undefined || auth.kind === 'key') return undefined;
  x.headers['www-authenticate'] = challenge(auth);
  app.metrics?.unauthorized(auth.kind === 'missing' ? 'missing_key' : auth.kind === 'invalid' ? 'invalid_key' : 'other_scheme');
  throw unauthorized(auth);
}

/** RFC 9110 section 10.1.1: an expectation the server cannot meet is a 417. */
function expect(_app: Instance, x: Exchange): Step {
  const value = x.req.headers.expect;
  if (value !== undefined && value.toLowerCase() !== '100-continue') {
    throw new ApiError('expectation_failed', `Expect "${clip(value)}" is not supported; only 100-continue is.`);
  }
  return undefined;
}

/** The Idempotency-Key, checked before the body is read: a bad key is refused without waiting for the upload. */
function idempotency(_app: Instance, x: Exchange): Step {
  if (x.req.headers['idempotency-key'] === undefined) return undefined;
  // node joins a repeated field with ", ": each line is seen apart to refuse a second one.
  const key = idempotencyKeyOf(x.req.headersDistinct['idempotency-key'] ?? []);
  if (key instanceof ApiError) throw key;
  x.idempotencyKey = key;
  return undefined;
}

function apiBody(app: Instance, x: Exchange): Step {
  const c = x.config;
  return app.bodies.readJson(x.req, x.res, c.maxBodyBytes, c.maxPendingBodyBytes).then((body) => {
    x.body = body;
  });
}

/** Admin bodies may hold a seed of many pets: up to ADMIN_MAX_BODY_BYTES, within maxPendingBodyBytes. */
function adminBody(app: Instance, x: Exchange): Step {
  const c = x.config;
  const max = Math.min(c.maxPendingBodyBytes, Math.max(c.maxBodyBytes, ADMIN_MAX_BODY_BYTES));
  return app.bodies.readJson(x.req, x.res, max, c.maxPendingBodyBytes).then((body) => {
    x.body = body;
  });
}
