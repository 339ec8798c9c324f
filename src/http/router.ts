// A small router: static paths are found by their text, compared with the few of the same
// length; paths with `{param}` segments are matched as their literal text around the
// parameters. No regular expressions on the request path.

export type Match<H> =
  | { readonly kind: 'found'; readonly handler: H; readonly params: Readonly<Record<string, string>>; readonly allow: string }
  /** `handler`: what the path answers a method it does not have (see Router.otherwise). */
  | { readonly kind: 'method_not_allowed'; readonly allow: string; readonly handler: H | undefined }
  | { readonly kind: 'not_found' };

interface PathEntry<H> {
  readonly template: string;
  /**
   * The template's text around its parameters, each parameter a whole segment: literals[0],
   * the first parameter, literals[1], ..., literals[names.length] (so "/v1/pets/{petId}" is
   * "/v1/pets/", petId, "").
   */
  readonly literals: readonly string[];
  /** The parameters' names in order, and an object with each as a field: what a match copies. */
  readonly names: readonly string[];
  readonly shape: Readonly<Record<string, string>>;
  /**
   * The path's methods and their handlers, side by side, looked up by a loop of string
   * comparisons: a path has a handful, and node hands over the method as one of its own
   * constant strings, which compare with ours at once (a Map would hash it first).
   */
  readonly methodList: string[];
  readonly handlerList: H[];
  allow: string;
  /** For static paths: the answer per method of foundMethods, built once (a match allocates nothing). */
  readonly foundMethods: string[];
  readonly found: Array<Match<H>>;
  /** The answer to a method the path does not have. */
  refused: Match<H>;
  otherwise: H | undefined;
}

/** The params of a path without any (every static path): one object for all, never written. */
export const NO_PARAMS: Readonly<Record<string, string>> = Object.freeze({});
const NOT_FOUND = Object.freeze({ kind: 'not_found' } as const);

export class Router<H> {
  readonly #static = new Map<string, PathEntry<H>>();
  readonly #dynamic: PathEntry<H>[] = [];
  /**
   * The static paths by length (below 256): a path is compared with the few of its length, as a
   * string, instead of being hashed for a Map lookup (node hands over a fresh string per
   * request); a path of a length no static path has (/v1/pets/123) is compared with none.
   */
  readonly #staticByLength: Array<Array<PathEntry<H>> | undefined> = new Array<Array<PathEntry<H>> | undefined>(256).fill(undefined);

  /** Register `handler` for `method` on `template` (e.g. "/v1/pets/{petId}"). */
  add(method: string, template: string, handler: H): this {
    const entry = this.#entry(template);
    if (entry.methodList.includes(method)) throw new Error(`route ${method} ${template} registered twice`);
    entry.methodList.push(method);
    entry.handlerList.push(handler);
    entry.allow = allowHeader(entry.methodList);
    refresh(entry);
    return this;
  }

  /** What `template` (registered) answers a method it does not have. */
  otherwise(template: string, handler: H): this {
    const entry = this.#entry(template);
    entry.otherwise = handler;
    refresh(entry);
    return this;
  }

  /** The templates registered, each with its Allow value. */
  paths(): Array<{ template: string; allow: string }> {
    return [...this.#static.values(), ...this.#dynamic].map((e) => ({ template: e.template, allow: e.allow }));
  }

  match(method: string, path: string): Match<H> {
    const n = path.length;
    const fixed = n < 256 ? sameText(this.#staticByLength[n], path) : this.#static.get(path);
    if (fixed) {
      const i = indexOf(fixed.foundMethods, method);
      return i !== -1 ? (fixed.found[i] as Match<H>) : pick(fixed, method, NO_PARAMS);
    }
    for (const entry of this.#dynamic) {
      const params = matchSegments(entry, path);
      if (params) return pick(entry, method, params);
    }
    return NOT_FOUND;
  }

  #entry(template: string): PathEntry<H> {
    const known = this.#static.get(template) ?? this.#dynamic.find((e) => e.template === template);
    if (known) return known;
    const names: string[] = [];
    const literals: string[] = [];
    let text = '';
    template.split('/').forEach((part, i) => {
      if (i > 0) text += '/';
      if (!part.startsWith('{')) text += part;
      else {
        names.push(part.slice(1, -1));
        literals.push(text);
        text = '';
      }
    });
    literals.push(text);
    if (names.length > MAX_PARAMS) throw new Error(`route ${template} has more than ${MAX_PARAMS} parameters`);
    const shape: Record<string, string> = {};
    for (const name of names) shape[name] = '';
    const entry: PathEntry<H> = {
      template, literals, names, shape, methodList: [], handlerList: [], allow: '', foundMethods: [], found: [],
      refused: NOT_FOUND, otherwise: undefined,
    };
    if (template.includes('{')) this.#dynamic.push(entry);
    else {
      this.#static.set(template, entry);
      if (template.length < 256) (this.#staticByLength[template.length] ??= []).push(entry);
    }
    return entry;
  }
}

/** Rebuilds an entry's prepared answers after a change. */
function refresh<H>(entry: PathEntry<H>): void {
  entry.refused = { kind: 'method_not_allowed', allow: entry.allow, handler: entry.otherwise };
  if (!entry.template.includes('{')) {
    entry.foundMethods.length = 0;
    entry.found.length = 0;
    for (const m of [...entry.methodList, 'HEAD']) {
      if (entry.foundMethods.includes(m)) continue;
      entry.foundMethods.push(m);
      entry.found.push(pick(entry, m, NO_PARAMS));
    }
  }
}

function pick<H>(entry: PathEntry<H>, method: string, params: Readonly<Record<string, string>>): Match<H> {
  // Per RFC 9110 section 9.3.2, HEAD is answered like GET without the body (node:http drops it).
  const handler = handlerOf(entry, method) ?? (method === 'HEAD' ? handlerOf(entry, 'GET') : undefined);
  if (handler === undefined) return entry.refused;
  return { kind: 'found', handler, params, allow: entry.allow };
}

/** The entry among `entries` whose template is `path`, if any. */
function sameText<H>(entries: ReadonlyArray<PathEntry<H>> | undefined, path: string): PathEntry<H> | undefined {
  if (entries === undefined) return undefined;
  for (let i = 0; i < entries.length; i++) if ((entries[i] as PathEntry<H>).template === path) return entries[i];
  return undefined;
}

function handlerOf<H>(entry: PathEntry<H>, method: string): H | undefined {
  const i = indexOf(entry.methodList, method);
  return i === -1 ? undefined : entry.handlerList[i];
}

/** Where `method` is in `methods`, or -1 (a loop the compiler inlines; Array#indexOf is a call). */
function indexOf(methods: readonly string[], method: string): number {
  for (let i = 0; i < methods.length; i++) if (methods[i] === method) return i;
  return -1;
}

const SLASH = 0x2f;
const MAX_PARAMS = 16;
/** Where each parameter of the match under way starts and ends in the path (reused). */
const BOUNDS = new Int32Array(MAX_PARAMS * 2);

/**
 * Matches `path` against a template by walking the string, without splitting it. Each literal
 * must stand at its place (compared as a copy of the path's text there); each parameter runs
 * from there to the next slash (or the path's end) and is not empty; the last literal must end
 * the path. The params object is made only for a match, as a copy of the entry's shape with the
 * values filled in: every match of a route gives an object of one hidden class, its fields
 * written in place (adding them one by one, by a name known only at run time, costs as much as
 * the rest of the match).
 */
function matchSegments(entry: PathEntry<unknown>, path: string): Record<string, string> | undefined {
  const literals = entry.literals;
  const names = entry.names;
  const count = names.length;
  const n = path.length;
  let pos = 0;
  for (let i = 0; i < count; i++) {
    const literal = literals[i] as string;
    const length = literal.length;
    // (A copy compared whole is cheaper than startsWith, which V8 compiles into a loop that
    // reads the path's characters one by one.)
    if (n < pos + length || (length !== 0 && path.slice(pos, pos + length) !== literal)) return undefined;
    pos += length;
    // (A parameter is a few characters: a loop is cheaper than a call of indexOf.)
    let end = pos;
    while (end < n && path.charCodeAt(end) !== SLASH) end++;
    if (end === pos) return undefined;
    BOUNDS[2 * i] = pos;
    BOUNDS[2 * i + 1] = end;
    pos = end;
  }
  const tail = literals[count] as string;
  if (n - pos !== tail.length || (tail.length !== 0 && path.slice(pos) !== tail)) return undefined;
  const params = { ...entry.shape };
  for (let i = 0; i < names.length; i++) params[names[i] as string] = path.slice(BOUNDS[2 * i] as number, BOUNDS[2 * i + 1] as number);
  return params;
}

function allowHeader(methods: readonly string[]): string {
  const names = [...methods];
  if (names.includes('GET') && !names.includes('HEAD')) names.push('HEAD');
  return names.join(', ');
}
