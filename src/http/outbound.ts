// After the handler, as data: what an answer's head is made of, how it is broken when a
// connection fault caught the request, and what runs once it is written, picked per route
// when the app builds its phases (and again for every config a reload brings), like PHASES
// before it. A route runs only the steps it can need, and a feature that is off adds no step.
// OUTBOUND below lists them in order, each with when a route has it and what it does: the
// head's fields (heads.ts), the connection fault's broken answer (broken.ts), then, once
// send.ts has written the answer, the journal record, the metrics and the access log line.
import { recordOf } from '../admin/index.js';
import type { Config } from '../config/index.js';
import { logRequest } from './access-log.js';
import { caughtAnswer } from './broken.js';
import type { AfterPhase, AppDeps, Exchange, FaultStep, HeadStep, Instance, Outbound } from './exchange.js';
import { HeadTemplate, contentFields, deprecationFields, gatheredFields, limitFields, requestIdField } from './heads.js';
import type { TableRoute } from './route-table.js';

type Step =
  | { readonly kind: 'head'; readonly step: HeadStep }
  | { readonly kind: 'fault'; readonly step: FaultStep }
  | { readonly kind: 'after'; readonly step: AfterPhase; readonly timed: boolean };

/** A step of the table below: its name, whether a route has it under a config and the app's collaborators, what it does. */
interface OutboundEntry {
  readonly name: string;
  readonly pick: (route: TableRoute, config: Config, deps: AppDeps) => Step | undefined;
  readonly does: string;
}

const head = (test: boolean, step: HeadStep): Step | undefined => (test ? { kind: 'head', step } : undefined);
const after = (test: boolean, step: AfterPhase, timed: boolean): Step | undefined => (test ? { kind: 'after', step, timed } : undefined);

/** Every step a route may run after its handler, in order. */
export const OUTBOUND: readonly OutboundEntry[] = [
  { name: 'deprecation', pick: (r) => head(r.deprecated !== undefined, deprecationFields), does: 'head: Deprecation, Sunset, Link (successor), built once per base URL' },
  { name: 'rate limit', pick: (r) => head(r.auth !== 'open', limitFields), does: 'head: X-RateLimit-*, RateLimit-Policy, RateLimit of the charge (Retry-After on a refusal)' },
  { name: 'gathered', pick: () => head(true, gatheredFields), does: 'head: what the phases, the handler or a failure set (CORS, Allow, Location, Link, WWW-Authenticate, ...)' },
  { name: 'request id', pick: () => head(true, requestIdField), does: 'head: X-Request-Id' },
  { name: 'content', pick: () => head(true, contentFields), does: 'head: Content-Type and Content-Length (with a body), Cache-Control' },
  {
    // The routes with the faults phase (lifecycle.ts): the only ones a connection fault catches.
    name: 'connection fault', pick: (r, c) => (c.admin !== undefined && r.group === 'api' && r.action.kind === 'api' ? { kind: 'fault', step: caughtAnswer } : undefined),
    does: 'the answer of a request a connection fault caught is broken instead (reset, empty, truncated)',
  },
  {
    name: 'journal',
    pick: (r, c, deps) => after(r.group === 'api' && c.admin !== undefined && c.admin.journal > 0 && deps.journal !== undefined, journalStep, false),
    does: 'once written: a `/v1` request is recorded in the journal, the whole exchange',
  },
  // Not on the scrape of /metrics itself (a quiet route): neither counted nor logged.
  { name: 'metrics', pick: (r, _c, deps) => after(deps.metrics !== undefined && !r.quiet, metricsStep, true), does: 'once written: the answer is counted' },
  { name: 'access log', pick: (r, _c, deps) => after(accessLogOn(deps) && !r.quiet, logRequest, true), does: 'once written: the access log line (`access-log.ts`)' },
];

/** Whether answers are logged (decided once: with access logs off, a request builds no log fields at all). */
export function accessLogOn(deps: AppDeps): boolean {
  return deps.logger.enabled?.('info') ?? true;
}

/** The route's steps after its handler under `config`. */
export function outboundOf(route: TableRoute, config: Config, deps: AppDeps): Outbound {
  const headSteps: HeadStep[] = [];
  const afterSteps: AfterPhase[] = [];
  let fault: FaultStep | undefined;
  let timed = false;
  for (const entry of OUTBOUND) {
    const step = entry.pick(route, config, deps);
    if (step === undefined) continue;
    if (step.kind === 'head') headSteps.push(step.step);
    else if (step.kind === 'fault') fault = step.step;
    else {
      afterSteps.push(step.step);
      timed ||= step.timed;
    }
  }
  return { head: headSteps, fault, after: afterSteps, timed, template: new HeadTemplate() };
}

/** The names of the route's steps after its handler (for the documentation's table). */
export function outboundNames(route: TableRoute, config: Config, deps: AppDeps): string[] {
  return OUTBOUND.filter((e) => e.pick(route, config, deps) !== undefined).map((e) => e.name);
}

function journalStep(app: Instance, x: Exchange, status: number, elapsed: number): void {
  if (x.journal) record(app, x, status, elapsed);
}

function metricsStep(app: Instance, x: Exchange, status: number, elapsed: number): void {
  app.metrics?.request(x.operation, status, elapsed);
}

/** The journal entry of an answered /v1 request, the whole exchange (only when the journal phase marked it). */
export function record(app: Instance, x: Exchange, status: number, elapsed: number): void {
  const journal = app.deps.journal;
  if (journal === undefined) return;
  const req = x.req;
  const key = req.headers['idempotency-key'];
  const answer = x.answer;
  journal.record(recordOf({
    requestId: x.reqId,
    at: app.deps.clock.now(),
    method: req.method ?? 'GET',
    path: x.path,
    rawQuery: x.rawQuery,
    operation: x.operation,
    keyName: x.keyName,
    rawHeaders: req.rawHeaders,
    requestBody: x.body,
    idempotencyKey: x.idempotencyKey ?? (typeof key === 'string' ? key : null),
    status,
    durationMs: Math.round(elapsed * 100) / 100,
    responseHeaders: answer?.headers,
    responseBody: answer?.body,
    responseType: answer?.type,
  }));
}
