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

/** What an API handler is given: plain data, read from the exchange; query and base on first use. */
class Input implements HandlerContext {
  readonly params: Readonly<Record<string, string>>;
  readonly rawQuery: string;
  readonly body: unknown;
  readonly idempotencyKey: string | undefined;
  readonly scope: string | undefined;
  readonly keyName: string | undefined;
  readonly now: number;
  readonly config: Config;
  readonly store: HandlerContext['store'];
  readonly pages: HandlerContext['pages'];
  readonly pets: HandlerContext['pets'];
  #query: Query | undefined;
  readonly #app: Instance;
  readonly #x: Exchange;

  constructor(app: Instance, x: Exchange) {
    this.#app = app;
    this.#x = x;
    this.params = x.params;
    this.rawQuery = x.rawQuery;
    this.body = x.body;
    this.idempotencyKey = x.idempotencyKey;
    const auth = x.auth;
    this.scope = auth?.kind === 'key' ? auth.entry.digest : undefined;
    this.keyName = x.keyName;
    this.now = x.started;
    this.config = x.config;
    this.store = app.deps.store;
    this.pages = app.pages;
    this.pets = app.pets;
  }

  get pathPrefix(): string | undefined {
    return this.#app.deps.pathPrefix;
  }

  get query(): Query {
    return (this.#query ??= this.rawQuery === '' ? NO_QUERY : parseQuery(this.rawQuery));
  }

  get base(): string {
    return baseOf(this.#app, this.#x);
  }
}
