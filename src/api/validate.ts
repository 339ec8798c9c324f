// A small validator whose schemas are plain data (a subset of JSON Schema), so the same
// objects validate requests and describe the API in the OpenAPI document.
// A check returns a list of problems, each naming the path of the offending value.
// `examples` (JSON Schema's annotation) are published in the document and never checked
// against a request; a test checks them against their own schema instead.

export type Schema =
  | { readonly type: 'string'; readonly enum?: readonly string[]; readonly minLength?: number; readonly maxLength?: number; readonly pattern?: string; readonly description?: string; readonly examples?: readonly string[] }
  | { readonly type: 'integer'; readonly format?: 'int64'; readonly minimum?: number; readonly maximum?: number; readonly default?: number; readonly description?: string; readonly examples?: readonly number[] }
  | { readonly type: 'object'; readonly properties: Readonly<Record<string, Schema>>; readonly required: readonly string[]; readonly description?: string; readonly examples?: readonly unknown[] }
  | { readonly type: 'array'; readonly items: Schema; readonly description?: string; readonly examples?: readonly unknown[] };

export interface Problem {
  readonly path: string;
  readonly message: string;
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return 'a string';
  if (typeof value === 'number') return Number.isInteger(value) ? 'an integer' : 'a number';
  return `a ${typeof value}`;
}

function checkString(schema: Extract<Schema, { type: 'string' }>, value: unknown, path: string): Problem[] {
  if (typeof value !== 'string') return [{ path, message: `must be a string, got ${describe(value)}` }];
  if (schema.enum && !schema.enum.includes(value)) {
    return [{ path, message: `must be one of ${schema.enum.join(', ')}` }];
  }
  if (schema.minLength !== undefined && value.length < schema.minLength) {
    return [{ path, message: schema.minLength === 1 ? 'must not be empty' : `must be at least ${schema.minLength} characters` }];
  }
  if (schema.maxLength !== undefined && value.length > schema.maxLength) {
    return [{ path, message: `must be at most ${schema.maxLength} characters` }];
  }
  if (schema.pattern !== undefined && !new RegExp(schema.pattern, 'u').test(value)) {
    return [{ path, message: `must match ${schema.pattern}` }];
  }
  return [];
}

function checkInteger(schema: Extract<Schema, { type: 'integer' }>, value: unknown, path: string): Problem[] {
  if (typeof value !== 'number' || !Number.isInteger(value)) {
    return [{ path, message: `must be an integer, got ${describe(value)}` }];
  }
  const min = schema.minimum ?? Number.MIN_SAFE_INTEGER;
  const max = schema.maximum ?? Number.MAX_SAFE_INTEGER;
  if (value < min || value > max) return [{ path, message: `must be between ${min} and ${max}` }];
  return [];
}

function checkObject(schema: Extract<Schema, { type: 'object' }>, value: unknown, path: string): Problem[] {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return [{ path: path || '(body)', message: `must be a JSON object, got ${describe(value)}` }];
  }
  const problems: Problem[] = [];
  const record = value as Record<string, unknown>;
  for (const name of schema.required) {
    if (!Object.hasOwn(record, name)) problems.push({ path: join(path, name), message: 'is required' });
  }
  for (const [name, sub] of Object.entries(schema.properties)) {
    // Only own properties count: a key named __proto__ or constructor is data, never a prototype.
    if (Object.hasOwn(record, name)) problems.push(...check(sub, record[name], join(path, name)));
  }
  return problems;
}

function join(path: string, key: string): string {
  return path ? `${path}.${key}` : key;
}

/** Every problem with `value` against `schema`; empty when it conforms. */
export function check(schema: Schema, value: unknown, path = ''): Problem[] {
  switch (schema.type) {
    case 'string':
      return checkString(schema, value, path);
    case 'integer':
      return checkInteger(schema, value, path);
    case 'object':
      return checkObject(schema, value, path);
    case 'array': {
      if (!Array.isArray(value)) return [{ path, message: `must be an array, got ${describe(value)}` }];
      return value.flatMap((item, i) => check(schema.items, item, `${path}[${i}]`));
    }
  }
}

/** One sentence naming every offending field, for the Error body's message. */
export function formatProblems(problems: readonly Problem[]): string {
  return problems.map((p) => `${p.path} ${p.message}`).join('; ');
}
