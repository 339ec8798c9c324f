// What the request lifecycle carries: the app's collaborators (AppDeps), what one app instance
// keeps between requests (Instance), and one request's state through the phases (Exchange).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AdminControl, AdminRoute, Faults, HandlerContext, RouteSpec } from '../api/index.js';
import type { Config } from '../config/index.js';
import type { ApiError, Clock, Logger } from '../core/index.js';
import type { Limiter } from '../limits/index.js';
import type { MetricsRecorder } from '../metrics/index.js';
import type { PetStore } from '../store/index.js';
import type { PendingBodies } from './body.js';
import type { Router } from './router.js';

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
  /** Records every answer for GET /metrics; undefined: metrics are off (and /metrics unknown). */
  readonly metrics?: MetricsRecorder;
  /** The scrape's text (with workers, of the whole service), made and cached by the metrics part; undefined: the recorder's own snapshot. */
  readonly scrape?: () => string | Promise<string>;
  /** What /__admin acts on; those paths exist only while the config names an admin key. */
  readonly admin?: AdminControl;
}

export type RequestListener = (req: IncomingMessage, res: ServerResponse) => void;

/** What one app instance keeps between requests (nothing is module-level). */
export interface Instance {
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
  readonly metrics: MetricsRecorder | undefined;
  /** Faults injected through /__admin/faults (checked per request only while one is armed). */
  readonly faults: Faults;
  readonly admin: Router<AdminRoute>;
  /** The operationIds of the routes: what a fault may name. */
  readonly operations: readonly string[];
}

/** Per-request state carried through the phases. */
export interface Exchange {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly started: number;
  readonly reqId: string;
  /** Headers every response of this request carries (rate limit, deprecation, ...). */
  readonly headers: Record<string, string>;
  keyName: string | undefined;
  /** The Error body's error, once the answer is one: its code goes into the access log. */
  error: ApiError | undefined;
  /** The matched route's operationId, for metrics; undefined when no route matched. */
  operation: string | undefined;
}
