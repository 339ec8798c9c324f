// Namespaces on the request path (only while the config allows some: without them this
// listener is not installed, and a request pays nothing). `/ns/{name}` in front of `/v1` or
// `/__admin` is taken off, and the request is served by that namespace's own app: the same
// lifecycle over the world's store, limiters, clock, journal and faults, writing its URLs
// with the prefix (pathPrefix). Anything else under /ns/ is the root's, a path like any other.
// A bad name (400) or one past the bound (409) is answered by the root, as a frame check is.
import { NAMESPACE_PREFIX, type NamespaceSelect, type NamespaceWorld } from '../admin/index.js';
import { ApiError } from '../core/index.js';
import type { AppDeps, RequestListener } from './exchange.js';
import { SLASH, originForm } from './request.js';

/** What the root app answers an ApiError with, for a request it has not matched. */
export type Refuse = (req: Parameters<RequestListener>[0], res: Parameters<RequestListener>[1], error: ApiError) => void;

/** The namespaces' listener, which also says whether a request goes to a namespace with a fault armed. */
export type NamespacesListener = RequestListener & { faultsArmed(req: Parameters<RequestListener>[0]): boolean };

export function withNamespaces(
  root: RequestListener, deps: AppDeps, namespaces: NamespaceSelect, createApp: (deps: AppDeps) => RequestListener, refuse: Refuse,
): NamespacesListener {
  const apps = new WeakMap<NamespaceWorld, RequestListener>();
  /** The namespace the request goes to (a name refused: its ApiError), undefined for the root. */
  const target = (req: Parameters<RequestListener>[0]): { world: NamespaceWorld | ApiError; inside: string } | undefined => {
    let url = req.url ?? '/';
    if (url.charCodeAt(0) !== SLASH) url = originForm(url);
    if (!url.startsWith(NAMESPACE_PREFIX) || deps.config().admin === undefined) return undefined;
    const end = url.indexOf('/', NAMESPACE_PREFIX.length);
    const inside = end === -1 ? '' : url.slice(end);
    if (!isServedInside(inside)) return undefined;
    return { world: namespaces.select(url.slice(NAMESPACE_PREFIX.length, end)), inside };
  };
  const listener = (req: Parameters<RequestListener>[0], res: Parameters<RequestListener>[1]): void => {
    const found = target(req);
    if (found === undefined) {
      root(req, res);
      return;
    }
    const { world, inside } = found;
    if (world instanceof ApiError) {
      refuse(req, res, world);
      return;
    }
    let app = apps.get(world);
    if (app === undefined) {
      app = createApp(worldDeps(deps, world));
      apps.set(world, app);
    }
    world.requests++;
    req.url = inside;
    app(req, res);
  };
  return Object.assign(listener, {
    faultsArmed(req: Parameters<RequestListener>[0]): boolean {
      const world = target(req)?.world;
      return world !== undefined && !(world instanceof ApiError) && world.harness.control.faults.armed > 0;
    },
  });
}

/** /v1 and /__admin, and what is under them: the paths a namespace has. */
function isServedInside(path: string): boolean {
  return startsSegment(path, '/v1') || startsSegment(path, '/__admin');
}

function startsSegment(path: string, segment: string): boolean {
  if (!path.startsWith(segment)) return false;
  const next = path.charCodeAt(segment.length);
  return Number.isNaN(next) || next === SLASH || next === QUESTION_MARK;
}

const QUESTION_MARK = 0x3f;

/** The root's collaborators, with the world's state in place of the root's. */
function worldDeps(deps: AppDeps, world: NamespaceWorld): AppDeps {
  return {
    store: world.store,
    clock: world.clock,
    logger: deps.logger,
    keyLimiter: world.keyLimiter,
    addressLimiter: world.addressLimiter,
    config: deps.config,
    get publicBase() {
      return deps.publicBase;
    },
    routes: deps.routes,
    metrics: deps.metrics,
    admin: world.harness.control,
    journal: world.harness.journal,
    pathPrefix: world.prefix,
  };
}

/** A base URL (ending in /v1) with the namespace's prefix before its /v1. */
export function prefixedBase(base: string, prefix: string): string {
  return `${base.slice(0, -3)}${prefix}/v1`;
}
