// What a phase of the request lifecycle is (lifecycle.ts runs them), and what phases share.
import type { Exchange, Instance } from './exchange.js';
import { prefixedBase } from './namespaces.js';
import { base } from './request.js';

/**
 * One step of a request. It returns undefined to go on, DONE once it has answered, or a
 * promise to go on (or stop) once it settles; it throws (or rejects with) what is to be
 * answered as an Error body.
 */
export type Phase = (app: Instance, x: Exchange) => Step;
export type Step = undefined | typeof DONE | Promise<unknown>;
export const DONE = 1;

/** The public base URL of this request's links, computed at most once per request. */
export function baseOf(app: Instance, x: Exchange): string {
  const prefix = app.deps.pathPrefix;
  return (x.base ??= prefix === undefined ? base(app, x.req, x.config) : prefixedBase(base(app, x.req, x.config), prefix));
}

/**
 * Generations of route tables, over every app of the process: the per-connection caches are
 * checked against them, and a connection may be served by the root and by namespaces' apps.
 */
let generations = 0;
export function nextGeneration(): number {
  return ++generations;
}
