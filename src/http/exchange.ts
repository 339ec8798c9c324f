// What the request lifecycle carries: what one app instance keeps between requests
// (Instance), and one request's state through the phases (Exchange). The app's collaborators
// (AppDeps) are in deps.ts.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ConnectionFault, Faults } from '../admin/index.js';
import type { HandlerContext } from '../api/index.js';
import type { Config } from '../config/index.js';
import type { ApiError } from '../core/index.js';
import type { LimitResult } from '../limits/index.js';
import type { MetricsRecorder } from '../metrics/index.js';
import type { AuthResult } from './auth.js';
import type { PendingBodies } from './body.js';
import type { AppDeps } from './deps.js';
import type { RouteTable, TableRoute } from './route-table.js';
import { NO_PARAMS } from './router.js';

export type { AppDeps } from './deps.js';


export type { RequestListener } from './connection/index.js';

/** One step after the handler, once the answer is written: given its status and the request's duration. */
export type AfterPhase = (app: Instance, x: Exchange, status: number, elapsed: number) => void;

/** One kind of field of an answer's head (heads.ts): writes its fields into [name, value, ...] from `n` on; the index after them. */
export type HeadStep = (x: Exchange, out: string[], n: number, type: string, length: number | undefined) => number;

/** A route's connection-fault step (broken.ts): true when it broke the answer instead of writing it. */
export type FaultStep = (x: Exchange, status: number, body: string | Buffer | undefined, type: string) => boolean;

/** What a route runs after its handler (outbound.ts), built with its phases. */
export interface Outbound {
  /** The kinds of fields its answers' heads may carry, in the order they are written. */
  readonly head: readonly HeadStep[];
  /** Only on routes a connection fault can catch, while faults are on. */
  readonly fault: FaultStep | undefined;
  /** Once the answer is written: the journal record, metrics, the access log. */
  readonly after: readonly AfterPhase[];
  /** Whether a step needs the request's duration (metrics, the access log). */
  readonly timed: boolean;
  /** The route's last plain head, written again with its changing values (HeadTemplate in heads.ts). */
  readonly template: { head(x: Exchange, type: string, length: number, limit: LimitResult | undefined): string[] };
}

/** What one app instance keeps between requests (nothing is module-level). */
export interface Instance {
  readonly deps: AppDeps;
  /** The routes and their phases for the config in force; rebuilt when the config changes. */
  table: RouteTable;
  readonly pages: HandlerContext['pages'];
  readonly pets: HandlerContext['pets'];
  readonly bodies: PendingBodies;
  /** Host header value -> base URL, so a request does not build the same string again. */
  readonly bases: Map<string, string>;
  /** The last Host value looked up in `bases`, and its base URL. */
  lastBase: { readonly host: string; readonly base: string } | undefined;
  /** Base URL -> the deprecation headers of a deprecated route's answers under it. */
  readonly deprecations: Map<string, readonly string[]>;
  /** Creates refused because the write queue was full, not yet logged (one line a second at most). */
  busy: { refused: number; loggedAt: number };
  readonly metrics: MetricsRecorder | undefined;
  /** Faults injected through /__admin/faults (checked per request only while one is armed). */
  readonly faults: Faults;
  /** The operationIds of the /v1 routes: what a fault may name. */
  readonly operations: readonly string[];
}

/** Per-request state carried through the phases (a class: one hidden shape for every request). */
export class Exchange {
  /**
   * Headers every response of this request carries (CORS, Allow, Connection, ...). The two
   * sets every request of the hot path has are kept apart, ready to write: `deprecated` and
   * `limit`, each written by a head step of its own (heads.ts).
   */
  readonly headers: Record<string, string> = {};
  /** The deprecation headers of a deprecated route, as [name, value, ...] built once per base URL. */
  deprecated: readonly string[] | undefined = undefined;
  /** The limiter's answer to this request's charge: its headers go on every answer after it. */
  limit: LimitResult | undefined = undefined;
  keyName: string | undefined = undefined;
  /** The Error body's error, once the answer is one: its code goes into the access log. */
  error: ApiError | undefined = undefined;
  /** The matched route's operationId, for metrics; undefined when no route matched. */
  operation: string | undefined = undefined;
  /** The route the request runs (a route of the table, or its 404/405 answer). */
  route: TableRoute | undefined = undefined;
  /** The request target's path and query string (without '?'). */
  path = '';
  rawQuery = '';
  params: Readonly<Record<string, string>> = NO_PARAMS;
  /** What authentication found: a key, a failure (answered 401 after the limiter), or undefined (none needed, or the admin key). */
  auth: AuthResult | undefined = undefined;
  /** The public base URL, computed at most once (see baseOf). */
  base: string | undefined = undefined;
  /** The parsed body, on routes that read one. */
  body: unknown = undefined;
  idempotencyKey: string | undefined = undefined;
  /** Recorded in the request journal once answered (set by the journal phase). */
  journal = false;
  /** The answer as written, kept for the journal only (set when `journal` is). */
  answer: { readonly headers: readonly string[]; readonly body: string | Buffer | undefined; readonly type: string } | undefined = undefined;
  /** A connection fault caught this request: its answer ends the connection this way instead. */
  end: ConnectionFault | undefined = undefined;
  /** The handler's own fields (Reply.headers), kept apart from `headers` while that is empty. */
  replied: Readonly<Record<string, string>> | undefined = undefined;
  /** What runs after the handler: the matched route's list (else the 404's). */
  outbound: Outbound;

  constructor(
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
    /** The monotonic clock read when the request arrived: the one reading of its start. */
    readonly started: number,
    readonly reqId: string,
    /** The config snapshot of this request, taken once. */
    readonly config: Config,
    outbound: Outbound,
  ) {
    this.outbound = outbound;
  }
}
