// The OpenAPI 3.1 document, generated from the route table and the same schema objects that
// validate requests, so it cannot drift from what the service does.
import type { Config } from '../config/index.js';
import { ERROR_CODES, type ErrorCode } from '../core/index.js';
import { RATE_LIMIT_HEADERS } from '../limits/index.js';
import type { RouteSpec } from './contract.js';
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

/**
 * A realistic value for a schema: its first example, else one built from its parts. Every
 * example lives in the schema it illustrates, so a test can check it against that schema.
 */
export function exampleOf(schema: Schema): Json | undefined {
  if (schema.examples !== undefined && schema.examples.length > 0) return schema.examples[0] as Json;
  switch (schema.type) {
    case 'object': {
      const out: { [key: string]: Json } = {};
      for (const [name, sub] of Object.entries(schema.properties)) {
        const value = exampleOf(sub);
        if (value !== undefined) out[name] = value;
      }
      return out;
    }
    case 'array': {
      const item = exampleOf(schema.items);
      return item === undefined ? [] : [item];
    }
    case 'integer':
      return schema.default;
    case 'string':
      return schema.enum?.[0];
  }
}

// Headers on every response of every operation (the rate-limit ones, and the request id).
const COMMON_HEADERS = [...RATE_LIMIT_HEADERS, 'X-Request-Id'];

/** Sent on every answer that names them: marked required in the document. */
const REQUIRED_HEADERS: ReadonlySet<string> = new Set([...COMMON_HEADERS, 'Retry-After']);

// Headers that come with a status, whichever operation answers it.
const STATUS_HEADERS: Readonly<Record<string, readonly string[]>> = {
  '401': ['WWW-Authenticate'],
  '405': ['Allow'],
  '429': ['Retry-After'],
  '503': ['Retry-After'],
};

// Headers of a success that depend on the operation.
function successHeaders(route: RouteSpec, status: string): string[] {
  // A create answered from an Idempotency-Key replay says so.
  if (status === '201') return route.parameters.some((p) => p.name === 'Idempotency-Key') ? ['Location', 'Idempotent-Replayed'] : ['Location'];
  if (status === '200' && route.operationId === 'listPets') return ['Link'];
  return [];
}

function headerRefs(names: readonly string[]): Json {
  return Object.fromEntries([...new Set([...COMMON_HEADERS, ...names])].map((h) => [h, { $ref: `#/components/headers/${h}` }]));
}

/** Codes only the admin API answers (not under /v1): never examples of a /v1 response. */
const ADMIN_ONLY_CODES: ReadonlySet<ErrorCode> = new Set<ErrorCode>(['conflict']);

/** The registry's codes answered with `status`: the examples of that Error response. */
function codesOf(status: string): ErrorCode[] {
  return (Object.keys(ERROR_CODES) as ErrorCode[]).filter((code) => String(ERROR_CODES[code].status) === status && !ADMIN_ONLY_CODES.has(code));
}

function errorResponse(status: string, description: string, extra: readonly string[], head: boolean): Json {
  const out: { [key: string]: Json } = { description, headers: headerRefs([...(STATUS_HEADERS[status] ?? []), ...extra]) };
  if (head) return out;
  const examples: { [name: string]: Json } = {};
  for (const code of codesOf(status)) {
    examples[code] = { summary: code, value: { code, message: ERROR_CODES[code].summary, status: ERROR_CODES[code].status } };
  }
  out.content = { 'application/json': { schema: { $ref: '#/components/schemas/Error' }, examples } };
  return out;
}

function responseSchema(schema: Schema | 'OpenApi' | undefined): { schema: Json; example: Json | undefined } {
  if (schema === 'OpenApi') return { schema: { $ref: '#/components/schemas/OpenApiDocument' }, example: OPENAPI_DOCUMENT_SCHEMA.examples[0] };
  if (schema === undefined) return { schema: { type: 'object' }, example: undefined };
  return { schema: toJsonSchema(schema), example: exampleOf(schema) };
}

/** One operation; `head` gives the HEAD twin of a GET (same answers, no bodies: RFC 9110 9.3.2). */
function operation(route: RouteSpec, head = false): Json {
  const deprecationHeaders = route.deprecated ? ['Deprecation', 'Sunset', 'Link'] : [];
  const responses: { [status: string]: Json } = {};
  for (const [status, r] of Object.entries(route.responses)) {
    if (r.schema === 'Error') {
      responses[status] = errorResponse(status, r.description, deprecationHeaders, head);
    } else {
      const response: { [key: string]: Json } = {
        description: r.description,
        headers: headerRefs([...(STATUS_HEADERS[status] ?? []), ...deprecationHeaders, ...successHeaders(route, status)]),
      };
      if (!head) {
        const { schema, example } = responseSchema(r.schema);
        response.content = { 'application/json': example === undefined ? { schema } : { schema, example } };
      }
      responses[status] = response;
    }
  }
  if (route.auth === 'key') responses['401'] ??= errorResponse('401', 'The API key is missing or invalid.', deprecationHeaders, head);
  responses['429'] ??= errorResponse('429', 'Rate limited (`rate_limited`) or temporarily banned (`temporarily_banned`).', deprecationHeaders, head);
  // Any operation can answer 503 (an outage of a backend, or a fault a test harness set up):
  // listed everywhere, so that validating proxies and generated clients accept it.
  responses['503'] ??= errorResponse('503', 'Unavailable for a moment (`service_unavailable`): nothing was changed; retry after `Retry-After` seconds.', deprecationHeaders, head);
  const op: { [key: string]: Json } = {
    operationId: head ? `${route.operationId}Head` : route.operationId,
    summary: head ? `Headers of: ${route.summary}` : route.summary,
    description: describeOperation(route, Object.keys(responses), head),
    tags: [...route.tags],
    parameters: route.parameters.map((p) => {
      const example = exampleOf(p.schema);
      const param: { [key: string]: Json } = { name: p.name, in: p.in, required: p.required, schema: toJsonSchema(p.schema) };
      if (p.description !== undefined) param.description = p.description;
      if (example !== undefined) param.example = example;
      return param;
    }),
    responses,
  };
  if (route.requestBody && !head) {
    const example = exampleOf(route.requestBody);
    const media: { [key: string]: Json } = { schema: toJsonSchema(route.requestBody) };
    if (example !== undefined) media.example = example;
    op.requestBody = { required: true, content: { 'application/json': media } };
  }
  if (route.auth === 'none') op.security = [];
  // OpenAPI 3.1 section 4.8.10: an empty requirement makes the scheme optional.
  if (route.auth === 'optional') op.security = [{}, { bearerAuth: [] }];
  if (route.deprecated) {
    op.deprecated = true;
    op['x-sunset'] = route.deprecated.sunset;
  }
  return op;
}

/** The operation's description, from its data: access, deprecation, and the errors it answers. */
function describeOperation(route: RouteSpec, statuses: readonly string[], head: boolean): string {
  const parts: string[] = [];
  if (head) parts.push(`The same answer as GET ${route.path} without its body (RFC 9110 9.3.2).`);
  else parts.push(route.summary);
  if (route.deprecated) {
    parts.push(`Removed on ${route.deprecated.sunset}; use GET ${route.deprecated.successor} with the status filter.`);
  }
  parts.push(route.auth === 'key'
    ? 'Needs an API key (`Authorization: Bearer <key>`) and counts against its rate limits.'
    : route.auth === 'optional'
      ? 'Needs no key; with a valid key it counts against that key\'s rate limits, otherwise it is limited per client address like keyless requests.'
      : 'Needs no key; limited per client address like keyless requests.');
  const codes = statuses.filter((s) => Number(s) >= 400).flatMap((s) => codesOf(s).map((c) => `\`${c}\` (${s})`));
  if (codes.length > 0) parts.push(`Error codes: ${codes.join(', ')}.`);
  return parts.join(' ');
}

/**
 * The schema of GET /openapi.json's answer: the parts of an OpenAPI 3.1 document a client
 * reads (the full schema is the OpenAPI Initiative's), with room for everything else.
 */
const OPENAPI_DOCUMENT_SCHEMA: { [key: string]: Json; examples: Json[] } = {
  type: 'object',
  description: 'An OpenAPI 3.1 document: this one.',
  required: ['openapi', 'info', 'paths'],
  properties: {
    openapi: { type: 'string', pattern: '^3\\.1\\.[0-9]+$', description: 'The OpenAPI version.' },
    info: {
      type: 'object',
      required: ['title', 'version'],
      properties: { title: { type: 'string' }, version: { type: 'string', description: 'The version of the service.' } },
      additionalProperties: true,
    },
    servers: {
      type: 'array',
      items: { type: 'object', required: ['url'], properties: { url: { type: 'string' }, description: { type: 'string' } } },
    },
    paths: { type: 'object', additionalProperties: { type: 'object' }, description: 'Path (relative to the server URL) -> operations.' },
    components: { type: 'object', additionalProperties: true },
  },
  additionalProperties: true,
  examples: [{ openapi: '3.1.0', info: { title: 'Pet Store', version: '1.0.0' }, servers: [{ url: 'http://127.0.0.1:8080/v1', description: 'this instance' }], paths: {} }],
};

const HEADER_DOCS: Record<string, [string, Json]> = {
  'X-RateLimit-Limit': ['The limit of the bucket that binds (minute or day).', { type: 'integer' }],
  'X-RateLimit-Remaining': ['Requests left in that bucket.', { type: 'integer' }],
  'X-RateLimit-Reset': ['Unix time (seconds, rounded up) at which that bucket is full again.', { type: 'integer' }],
  'RateLimit-Policy': ['IETF draft policy field, e.g. `"minute";q=60;w=60, "day";q=1000;w=86400`.', { type: 'string' }],
  RateLimit: ['IETF draft field (draft-ietf-httpapi-ratelimit-headers-11) for the binding bucket: r remaining, t seconds until its next whole token, e.g. `"minute";r=42;t=1`.', { type: 'string' }],
  'Retry-After': ['Seconds to wait before retrying.', { type: 'integer' }],
  Allow: ['The methods the path answers (RFC 9110 10.2.1).', { type: 'string' }],
  'WWW-Authenticate': ['The bearer challenge (RFC 6750).', { type: 'string' }],
  Deprecation: ['RFC 9745 deprecation date, `@<unix seconds>`.', { type: 'string' }],
  Sunset: ['RFC 8594 removal date.', { type: 'string' }],
  Link: ['RFC 8288 links: `rel="next"` for pages, `rel="successor-version"` for the deprecated operation.', { type: 'string' }],
  Location: ['URL of the created animal.', { type: 'string' }],
  'Idempotent-Replayed': ['`true` when this answer is the replay of an earlier create with the same `Idempotency-Key` (nothing new was stored); absent on a first answer.', { type: 'string', enum: ['true'] }],
  'X-Request-Id': ['The request id: the client\'s own `X-Request-Id` when it is 1..128 plain characters, otherwise one the service makes: 8 hex digits that differ per start, a hyphen and a base-36 counter (e.g. `829d43b7-1a`). Also in the access log.', { type: 'string' }],
};

/**
 * The whole document for a config. `base` is the base URL of the instance serving it (as its
 * links say): the first server, so generated clients and Swagger UI talk to this instance;
 * the config's environments follow.
 */
export function openApiDocument(routes: readonly RouteSpec[], config: Config, version: string, base: string, pathPrefix?: string): Json {
  const paths: { [path: string]: { [method: string]: Json } } = {};
  for (const route of routes) {
    const item = (paths[route.path] ??= {});
    item[route.method.toLowerCase()] = operation(route);
    // The router answers HEAD for every GET (router.ts), so the document says so.
    if (route.method === 'GET') item.head = operation(route, true);
  }
  const servers = [{ url: base, description: 'this instance' }];
  for (const name of ['production', 'staging'] as const) {
    // Inside a namespace, the same namespace of that environment.
    const url = pathPrefix === undefined ? config.environments[name] : `${config.environments[name].slice(0, -3)}${pathPrefix}/v1`;
    if (url !== base) servers.push({ url, description: name });
  }
  const used = new Set(JSON.stringify(paths).match(/#\/components\/headers\/[A-Za-z-]+/g)?.map((ref) => ref.slice('#/components/headers/'.length)));
  return {
    openapi: '3.1.0',
    info: {
      title: 'Pet Store',
      version,
      license: { name: 'MIT', identifier: 'MIT' },
      contact: { name: 'Pet Store maintainers' },
      description: `Error codes: ${Object.keys(ERROR_CODES).map((c) => `\`${c}\``).join(', ')}.`,
    },
    servers,
    security: [{ bearerAuth: [] }],
    tags: [
      { name: 'Pets', description: 'List, add and look up animals.' },
      { name: 'Store', description: 'Store operations; their shapes are not published yet.' },
      { name: 'Meta', description: 'About the API itself.' },
    ],
    paths,
    components: {
      securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', description: 'API key as a bearer token.' } },
      schemas: {
        ...Object.fromEntries([...COMPONENTS].map(([schema, name]) => [name, toJsonSchema(schema, true)])),
        OpenApiDocument: OPENAPI_DOCUMENT_SCHEMA,
      },
      // Only the headers some response names (an unused component is a linter warning).
      // Headers every answer carries (and Retry-After, on every answer that names it) are required.
      headers: Object.fromEntries(Object.entries(HEADER_DOCS).filter(([name]) => used.has(name)).map(([name, [description, schema]]) => [
        name, (REQUIRED_HEADERS.has(name) ? { description, required: true, schema } : { description, schema }) as Json,
      ])),
    },
  };
}
