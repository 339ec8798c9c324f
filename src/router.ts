// A small router: static paths are one Map lookup; paths with `{param}` segments are matched
// segment by segment. No regular expressions on the request path.

export type Match<H> =
  | { readonly kind: 'found'; readonly handler: H; readonly params: Readonly<Record<string, string>>; readonly allow: string }
  | { readonly kind: 'method_not_allowed'; readonly allow: string }
  | { readonly kind: 'not_found' };

interface PathEntry<H> {
  readonly template: string;
  readonly segments: readonly string[];
  readonly methods: Map<string, H>;
  allow: string;
}

const NO_PARAMS: Readonly<Record<string, string>> = Object.freeze({});

export class Router<H> {
  readonly #static = new Map<string, PathEntry<H>>();
  readonly #dynamic: PathEntry<H>[] = [];

  /** Register `handler` for `method` on `template` (e.g. "/v1/pets/{petId}"). */
  add(method: string, template: string, handler: H): this {
    const entry = this.#entry(template);
    if (entry.methods.has(method)) throw new Error(`route ${method} ${template} registered twice`);
    entry.methods.set(method, handler);
    entry.allow = allowHeader(entry.methods);
    return this;
  }

  match(method: string, path: string): Match<H> {
    const fixed = this.#static.get(path);
    if (fixed) return pick(fixed, method, NO_PARAMS);
    const parts = path.split('/');
    for (const entry of this.#dynamic) {
      const params = matchSegments(entry.segments, parts);
      if (params) return pick(entry, method, params);
    }
    return { kind: 'not_found' };
  }

  /** Every route, for describing the API. */
  *routes(): Generator<{ method: string; template: string; handler: H }> {
    for (const entry of [...this.#static.values(), ...this.#dynamic]) {
      for (const [method, handler] of entry.methods) yield { method, template: entry.template, handler };
    }
  }

  #entry(template: string): PathEntry<H> {
    const known = this.#static.get(template) ?? this.#dynamic.find((e) => e.template === template);
    if (known) return known;
    const entry: PathEntry<H> = { template, segments: template.split('/'), methods: new Map(), allow: '' };
    if (template.includes('{')) this.#dynamic.push(entry);
    else this.#static.set(template, entry);
    return entry;
  }
}

function pick<H>(entry: PathEntry<H>, method: string, params: Readonly<Record<string, string>>): Match<H> {
  // Per RFC 9110 section 9.3.2, HEAD is answered like GET without the body (node:http drops it).
  const handler = entry.methods.get(method) ?? (method === 'HEAD' ? entry.methods.get('GET') : undefined);
  if (handler === undefined) return { kind: 'method_not_allowed', allow: entry.allow };
  return { kind: 'found', handler, params, allow: entry.allow };
}

function matchSegments(template: readonly string[], parts: readonly string[]): Record<string, string> | undefined {
  if (template.length !== parts.length) return undefined;
  let params: Record<string, string> | undefined;
  for (let i = 0; i < template.length; i++) {
    const want = template[i] as string;
    const got = parts[i] as string;
    if (want.startsWith('{')) {
      if (got === '') return undefined;
      params ??= Object.create(null) as Record<string, string>;
      params[want.slice(1, -1)] = got;
    } else if (want !== got) {
      return undefined;
    }
  }
  return params ?? {};
}

function allowHeader<H>(methods: Map<string, H>): string {
  const names = [...methods.keys()];
  if (names.includes('GET') && !names.includes('HEAD')) names.push('HEAD');
  return names.join(', ');
}
