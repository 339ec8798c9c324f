// GET /openapi.json: the OpenAPI document of the routes it is given, itself included.
import type { Config } from '../config/index.js';
import type { RouteSpec } from './contract.js';
import { openApiDocument } from './openapi.js';

/**
 * GET /openapi.json: public; with a valid key charged to that key, otherwise limited per
 * client address like keyless requests. The document
 * is built once per config in force and base URL (its first server is the serving instance),
 * and rebuilt after a reload or when asked for under another base URL.
 */
export function openApiRoute(routes: readonly RouteSpec[], version: string): RouteSpec {
  let cache: { config: Config; base: string; body: string } | undefined;
  const route: RouteSpec = {
    operationId: 'getOpenApi',
    method: 'GET',
    path: '/openapi.json',
    summary: 'This API described as OpenAPI 3.1. Needs no key.',
    tags: ['Meta'],
    // A harness that fetches it once per test file is charged to its key, not to the small
    // per-address budget of keyless requests.
    auth: 'optional',
    parameters: [],
    responses: { 200: { description: 'The OpenAPI document.', schema: 'OpenApi' } },
    handler({ config, base, pathPrefix }) {
      if (cache?.config !== config || cache.base !== base) {
        // Indented, so that linters and readers get meaningful line numbers.
        cache = { config, base, body: JSON.stringify(openApiDocument([...routes, route], config, version, base, pathPrefix), null, 2) };
      }
      return { status: 200, body: cache.body };
    },
  };
  return route;
}
