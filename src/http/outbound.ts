// After the handler, as data: what runs once an answer is written, picked per route when the
// app builds its phases (and again for every config a reload brings), like PHASES before it.
// A feature that is off adds no step, so it costs an answer nothing:
//
//   step           on routes                                   does
//   -------------  ------------------------------------------  ---------------------------------------
//   journal        API routes, with an admin key and a journal  records a /v1 request: the whole exchange
//   metrics        every route, when metrics are on             counts the answer (not the quiet scrape)
//   access log     every route, when info lines are logged      the request's log line (access-log.ts)
//
// The answer itself (headers, body, a connection fault's broken answer) is written by send.ts.
import { recordOf } from '../admin/index.js';
import type { Config } from '../config/index.js';
import { logRequest } from './access-log.js';
import type { AfterList, AfterPhase, Exchange, Instance } from './exchange.js';
import type { TableRoute } from './route-table.js';

/** A step of the table below: its name, and whether a route has it under a config and app. */
interface AfterEntry {
  readonly name: string;
  readonly timed: boolean;
  readonly pick: (route: TableRoute, config: Config, app: Instance) => AfterPhase | undefined;
}

const when = (test: boolean, step: AfterPhase): AfterPhase | undefined => (test ? step : undefined);

/** Every step a route may run after its answer, in order. */
export const AFTER: readonly AfterEntry[] = [
  {
    name: 'journal', timed: false,
    pick: (r, c, app) => when(r.group === 'api' && c.admin !== undefined && c.admin.journal > 0 && app.deps.journal !== undefined, journalStep),
  },
  { name: 'metrics', timed: true, pick: (_r, _c, app) => when(app.metrics !== undefined, metricsStep) },
  { name: 'access log', timed: true, pick: (_r, _c, app) => when(app.accessLog, logStep) },
];

/** The route's steps after its answer under `config`. */
export function afterList(route: TableRoute, config: Config, app: Instance): AfterList {
  const steps: AfterPhase[] = [];
  let timed = false;
  for (const entry of AFTER) {
    const step = entry.pick(route, config, app);
    if (step === undefined) continue;
    steps.push(step);
    timed ||= entry.timed;
  }
  return { steps, timed };
}

/** The names of the route's steps after its answer (for the documentation's table). */
export function afterNames(route: TableRoute, config: Config, app: Instance): string[] {
  return AFTER.filter((e) => e.pick(route, config, app) !== undefined).map((e) => e.name);
}

function journalStep(app: Instance, x: Exchange, status: number, elapsed: number): void {
  if (x.journal) record(app, x, status, elapsed);
}

function metricsStep(app: Instance, x: Exchange, status: number, elapsed: number): void {
  if (!x.quiet) app.metrics?.request(x.operation, status, elapsed);
}

function logStep(app: Instance, x: Exchange, status: number, elapsed: number): void {
  if (!x.quiet) logRequest(app, x, status, elapsed);
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
