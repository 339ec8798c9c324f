// The API's face: the route contract, the operations, the OpenAPI route and the page cache.
export type { ConnectionEnd, HandlerContext, Parameter, Query, Reply, RouteSpec } from './contract.js';
export { ROUTES } from './routes.js';
export { openApiRoute } from './openapi-route.js';
export { PageCache, PetCache } from './page-cache.js';
export { IDEMPOTENCY_HEADER, idempotencyKeyOf } from './idempotency-key.js';
export { parseNewPet } from './schemas.js';
