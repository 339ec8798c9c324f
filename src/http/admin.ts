// /__admin: reset, seed and faults for test harnesses (docs/operating.md, "Admin endpoints"). Only the
// config's admin key opens them; any other request gets the 401 of a wrong key, charged to
// the same per-address budget as every other 401. Without an admin key in the config these
// paths are never looked at here: app.ts routes them like any unknown path.
import { ADMIN_MAX_BODY_BYTES, type AdminContext } from '../api/index.js';
import type { Config, KeyEntry } from '../config/index.js';
import { ApiError, clip } from '../core/index.js';
import type { LimitResult } from '../limits/index.js';
import { applyLimit, chargeAddress } from './charge.js';
import { authenticate, challenge, unauthorized, type AuthResult } from './auth.js';
import type { Exchange, Instance } from './exchange.js';
import { fail } from './failure.js';
import { send } from './send.js';

export const ADMIN_PREFIX = '/__admin/';

export function handleAdmin(app: Instance, x: Exchange, config: Config, method: string, path: string): Promise<void> | undefined {
  const digest = (config.admin as { readonly digest: string }).digest;
  const entry: KeyEntry = { digest, name: 'admin', plan: 'admin', limits: config.anonymous };
  const auth = authenticate(x.req.headers.authorization, new Map([[digest, entry]]));
  if (auth.kind !== 'key') {
    const limit = chargeAddress(app.deps, x, config);
    if (limit instanceof Promise) return limit.then((l) => refuse(app, x, l, auth));
    refuse(app, x, limit, auth);
    return undefined;
  }
  const match = app.admin.match(method, path);
  if (match.kind === 'not_found') {
    fail(app, x, new ApiError('not_found', `No admin operation at ${clip(path)}.`));
    return undefined;
  }
  if (match.kind === 'method_not_allowed') {
    x.headers.allow = match.allow;
    fail(app, x, new ApiError('method_not_allowed', `Method ${clip(method)} is not allowed on ${clip(path)}; allowed: ${match.allow}.`));
    return undefined;
  }
  x.operation = match.handler.operationId;
  const control = app.deps.admin;
  if (control === undefined) return undefined; // not reached: the admin router is empty without it
  const ctx: AdminContext = {
    req: x.req,
    res: x.res,
    bodies: app.bodies,
    maxBodyBytes: Math.min(config.maxPendingBodyBytes, Math.max(config.maxBodyBytes, ADMIN_MAX_BODY_BYTES)),
    maxPendingBodyBytes: config.maxPendingBodyBytes,
    control,
    operations: app.operations,
  };
  return match.handler.handler(ctx).then((reply) => {
    if (reply instanceof ApiError) return fail(app, x, reply);
    if (reply.headers) Object.assign(x.headers, reply.headers);
    send(app, x, reply.status, reply.body);
  });
}

/** The 401 of a request without the admin key, as any path's (auth.ts), with the keyless budget's headers (or its 429). */
function refuse(app: Instance, x: Exchange, limit: LimitResult, auth: AuthResult): void {
  try {
    applyLimit(app, x, limit);
    x.headers['www-authenticate'] = challenge(auth);
    app.metrics?.unauthorized(auth.kind === 'missing' ? 'missing_key' : auth.kind === 'invalid' ? 'invalid_key' : 'other_scheme');
    throw unauthorized(auth);
  } catch (err) {
    fail(app, x, err);
  }
}
