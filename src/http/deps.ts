// What the HTTP app is given: its collaborators, passed in so that tests and embedders can
// swap them. Apart from exchange.ts, so the route table can name them without a circle.
import type { AdminControl, NamespaceSelect, RequestJournal } from '../admin/index.js';
import type { RouteSpec } from '../api/index.js';
import type { Config } from '../config/index.js';
import type { Clock, Logger } from '../core/index.js';
import type { Limiter } from '../limits/index.js';
import type { MetricsRecorder, MetricsSnapshot } from '../metrics/index.js';
import type { PetStore } from '../store/index.js';

export interface AppDeps {
  readonly store: PetStore;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Limits per API key (ids are key digests). */
  readonly keyLimiter: Limiter;
  /** Limits per client address, for requests without a valid key (bounded table). */
  readonly addressLimiter: Limiter;
  /** The config in force; a reload swaps it (a new object: the app rebuilds its routes' phases). */
  config(): Config;
  /** Public base URL ending in /v1, when fixed by --env; otherwise derived from the request. */
  readonly publicBase: string | undefined;
  readonly routes: readonly RouteSpec[];
  /** Records every answer for GET /metrics; undefined: metrics are off (and /metrics unknown). */
  readonly metrics?: MetricsRecorder;
  /** With several workers: the other workers' snapshots, merged with this one's into a scrape of the whole service. */
  readonly peerMetrics?: () => Promise<readonly MetricsSnapshot[]>;
  /**
   * The text of one scrape of GET /metrics; by default this process's recorder (merged with
   * peerMetrics when given), rendered. The one function /metrics calls.
   */
  readonly scrape?: () => string | Promise<string>;
  /** What /__admin acts on; those paths exist only while the config names an admin key. */
  readonly admin?: AdminControl;
  /**
   * Why this process should get no traffic now (GET /readyz answers 503 with it), or
   * undefined when it is ready (for instance: stopping). Besides it, /readyz is red while the
   * store is unreachable.
   */
  readonly readiness?: () => string | undefined;
  /** This process's request journal: /v1 requests are recorded only with it and an admin key set. */
  readonly journal?: RequestJournal;
  /** Namespaces (/ns/{name}), while admin.namespaces is above 0: each a world served by an app of its own (namespaces.ts). */
  readonly namespaces?: NamespaceSelect;
  /** Inside a namespace: its prefix (/ns/{name}), written into every URL before /v1. */
  readonly pathPrefix?: string;
}
