// The OpenAPI 3.1 document, generated from the route table and the same schema objects that
// validate requests, so it cannot drift from what the service does.
import type { Config } from './config.js';
import { ERROR_CODES } from './errors.js';
import type { RouteSpec } from './routes.js';
import { errorSchema, newPetSchema, petSchema, petStatusSchema } from './schemas.js';
import type { Schema } from './validate.js';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Schema objects published as named components (and referenced by $ref elsewhere). */
const COMPONENTS = new Map<Schema, string>([
  [petSchema, 'Pet'],
  [newPetSchema, 'NewPet'],
  [petStatusSchema, 'PetStatus'],
  [errorSchema, 'Error'],
]);

function toJsonSchema(schema: Schema, top = false): Json {
  const name = COMPONENTS.get(schema);
  if (name !== undefined && !top) return { $ref: `#/components/schemas/${name}` };
  const out: { [key: string]: Json } = {};
  for (const [k, v] of Object.entries(schema)) {
    if (k === 'properties') {
      out.properties = Object.fromEntries(Object.entries(v as Record<string, Schema>).map(([p, s]) => [p, toJsonSchema(s)]));
    } else if (k === 'items') {
      out.items = toJsonSchema(v as Schema);
    } else {
      out[k] = v as Json;
    }
  }
  return out;
}

// Headers on every response of every operation (the rate-limit ones, and the request id).
const COMMON_HEADERS = ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset', 'RateLimit-Policy', 'RateLimit', 'X-Request-Id'];

function headerRefs(extra: readonly string[] = []): Json {
  return Object.fromEntries([...COMMON_HEADERS, ...extra].map((h) => [h, { $ref: `#/components/headers/${h}` }]));
}

function errorResponse(description: string, extra: readonly string[] = []): Json {
  return {
    description,
    headers: headerRefs(extra),
    content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
  };
}

function operation(route: RouteSpec): Json {
  const deprecationHeaders = route.deprecated ? ['Deprecation', 'Sunset', 'Link'] : [];
  const responses: { [status: string]: Json } = {};
  for (const [status, r] of Object.entries(route.responses)) {
    if (r.schema === 'Error') {
      responses[status] = errorResponse(r.description, deprecationHeaders);
    } else {
      const extra = status === '201' ? ['Location'] : status === '200' && route.operationId === 'listPets' ? ['Link'] : [];
      responses[status] = {
        description: r.description,
        headers: headerRefs([...deprecationHeaders, ...extra.filter((h) => !deprecationHeaders.includes(h))]),
        content: { 'application/json': { schema: r.schema ? toJsonSchema(r.schema) : { type: 'object' } } },
      };
    }
  }
  if (route.auth === 'key') responses['401'] ??= errorResponse('The API key is missing or invalid.', ['WWW-Authenticate', ...deprecationHeaders]);
  responses['429'] ??= errorResponse('Rate limited (`rate_limited`) or temporarily banned (`temporarily_banned`).', ['Retry-After', ...deprecationHeaders]);
  const op: { [key: string]: Json } = {
    operationId: route.operationId,
    summary: route.summary,
    tags: [...route.tags],
    parameters: route.parameters.map((p) => ({ name: p.name, in: p.in, required: p.required, schema: toJsonSchema(p.schema) })),
    responses,
  };
  if (route.requestBody) {
    op.requestBody = { required: true, content: { 'application/json': { schema: toJsonSchema(route.requestBody) } } };
  }
  if (route.auth === 'none') op.security = [];
  if (route.deprecated) {
    op.deprecated = true;
    op['x-sunset'] = route.deprecated.sunset;
    op.description = `Deprecated; removed on ${route.deprecated.sunset}. Use GET ${route.deprecated.successor} with the status filter.`;
  }
  return op;
}

const HEADER_DOCS: Record<string, [string, Json]> = {
  'X-RateLimit-Limit': ['The limit of the bucket that binds (minute or day).', { type: 'integer' }],
  'X-RateLimit-Remaining': ['Requests left in that bucket.', { type: 'integer' }],
  'X-RateLimit-Reset': ['Unix time (seconds, rounded up) at which that bucket is full again.', { type: 'integer' }],
  'RateLimit-Policy': ['IETF draft policy field, e.g. `"minute";q=60;w=60, "day";q=1000;w=86400`.', { type: 'string' }],
  RateLimit: ['IETF draft field (draft-ietf-httpapi-ratelimit-headers-11) for the binding bucket: r remaining, t seconds until its next whole token, e.g. `"minute";r=42;t=1`.', { type: 'string' }],
  'Retry-After': ['Seconds to wait before retrying.', { type: 'integer' }],
  'WWW-Authenticate': ['The bearer challenge (RFC 6750).', { type: 'string' }],
  Deprecation: ['RFC 9745 deprecation date, `@<unix seconds>`.', { type: 'string' }],
  Sunset: ['RFC 8594 removal date.', { type: 'string' }],
  Link: ['RFC 8288 links: `rel="next"` for pages, `rel="successor-version"` for the deprecated operation.', { type: 'string' }],
  Location: ['URL of the created animal.', { type: 'string' }],
  'X-Request-Id': ['The request id: the client\'s own `X-Request-Id` when it is 1..128 plain characters, a UUID otherwise. Also in the access log.', { type: 'string' }],
};

/** The whole document for a config (servers come from its environments). */
export function openApiDocument(routes: readonly RouteSpec[], config: Config, version: string): Json {
  const paths: { [path: string]: { [method: string]: Json } } = {};
  for (const route of routes) {
    paths[route.path] ??= {};
    (paths[route.path] as { [method: string]: Json })[route.method.toLowerCase()] = operation(route);
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Pet Store',
      version,
      license: { name: 'MIT', identifier: 'MIT' },
      description: `Error codes: ${Object.keys(ERROR_CODES).map((c) => `\`${c}\``).join(', ')}.`,
    },
    servers: [
      { url: config.environments.production, description: 'production' },
      { url: config.environments.staging, description: 'staging' },
    ],
    security: [{ bearerAuth: [] }],
    tags: [
      { name: 'Pets', description: 'List, add and look up animals.' },
      { name: 'Store', description: 'Store operations; their shapes are not published yet.' },
      { name: 'Meta', description: 'About the API itself.' },
    ],
    paths,
    components: {
      securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', description: 'API key as a bearer token.' } },
      schemas: Object.fromEntries([...COMPONENTS].map(([schema, name]) => [name, toJsonSchema(schema, true)])),
      headers: Object.fromEntries(Object.entries(HEADER_DOCS).map(([name, [description, schema]]) => [name, { description, schema }])),
    },
  };
}
