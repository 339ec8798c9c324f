// The last phase of every route: what each kind of route does (a /v1 handler, an admin
// operation, a fixed answer, a refusal), and what an API handler is given.
import type { AdminContext } from '../admin/index.js';
import type { HandlerContext, Query, Reply } from '../api/index.js';
import type { Config } from '../config/index.js';
import { ApiError } from '../core/index.js';
import type { AppDeps, Exchange, Instance } from './exchange.js';
import { fail } from './failure.js';
import { DONE, baseOf, type Phase, type Step } from './phase.js';
import { parseQuery } from './query.js';
import type { TableRoute } from './route-table.js';
import { sendReply } from './send.js';

// ---- The handlers: what each kind of route does last ----

/** The route's last phase, made for the route when its phases are built (its action known then). */
export function handlerOf(route: TableRoute): Phase {
  const action = route.action;
  switch (action.kind) {
    case 'api': {
      const spec = action.spec;
      return (app, x) => answer(app, x, spec.handler(new Input(app, x)));
    }
    case 'admin': {
      const spec = action.spec;
      return (app, x) => {
        const control = app.deps.admin as NonNullable<AppDeps['admin']>;
        const ctx: AdminContext = { body: x.body, rawQuery: x.rawQuery, params: x.params, now: x.started, control, operations: app.operations };
        return answer(app, x, spec.handler(ctx));
      };
    }
    case 'fixed': {
      const reply = action.reply;
      return (app, x) => answer(app, x, reply(x.req.method ?? 'GET'));
    }
    case 'refuse': {
      const { error, allow } = action;
      return (_app, x) => {
        if (allow !== undefined) x.headers.allow = allow;
        throw error(x.req.method ?? 'GET', x.path);
      };
    }
  }
}

/** Sends a handler's answer, at once or when its promise settles. */
function answer(app: Instance, x: Exchange, reply: Reply | ApiError | Promise<Reply | ApiError>): Step {
  if (reply instanceof Promise) {
    return reply.then((r) => {
      if (r instanceof ApiError) fail(app, x, r);
      else sendReply(app, x, r);
      return DONE;
    });
  }
  if (reply instanceof ApiError) fail(app, x, reply);
  else sendReply(app, x, reply);
  return DONE;
}

const NO_QUERY: Query = new Map();

/**
 * What an API handler is given: plain data, read from the exchange when the handler asks for
 * it (a handler reads a few fields: nothing is copied for the others); query and base on
 * first use.
 */
class Input implements HandlerContext {
  #query: Query | undefined;
  readonly #app: Instance;
  readonly #x: Exchange;

  constructor(app: Instance, x: Exchange) {
    this.#app = app;
    this.#x = x;
  }

  get params(): Readonly<Record<string, string>> {
    return this.#x.params;
  }

  get rawQuery(): string {
    return this.#x.rawQuery;
  }

  get body(): unknown {
    return this.#x.body;
  }

  get idempotencyKey(): string | undefined {
    return this.#x.idempotencyKey;
  }

  get scope(): string | undefined {
    const auth = this.#x.auth;
    return auth?.kind === 'key' ? auth.entry.digest : undefined;
  }

  get keyName(): string | undefined {
    return this.#x.keyName;
  }

  get now(): number {
    return this.#x.started;
  }

  get config(): Config {
    return this.#x.config;
  }

  get store(): HandlerContext['store'] {
    return this.#app.deps.store;
  }

  get pages(): HandlerContext['pages'] {
    return this.#app.pages;
  }

  get pets(): HandlerContext['pets'] {
    return this.#app.pets;
  }

  get pathPrefix(): string | undefined {
    return this.#app.deps.pathPrefix;
  }

  get query(): Query {
    return (this.#query ??= this.#x.rawQuery === '' ? NO_QUERY : parseQuery(this.#x.rawQuery));
  }

  get base(): string {
    return baseOf(this.#app, this.#x);
  }
}
