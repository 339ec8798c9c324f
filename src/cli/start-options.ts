// What the command line starts a server with, from the resolved options: shared by the one
// process of the default and by each worker of --workers N.
import type { Logger, NewPet } from '../core/index.js';
import { StartError, type startWithConfig } from '../server/index.js';
import { ConfigError } from '../config/index.js';
import { StoreOpenError } from '../store/index.js';
import { ADMIN_KEY_ENV, UsageError, lockStaleFromEnv, type Resolved } from './args.js';

export function startOptions(resolved: Resolved, env: NodeJS.ProcessEnv, logger: Logger, seed: ReadonlyArray<NewPet & { id?: number }> | undefined): Parameters<typeof startWithConfig>[0] {
  return {
    config: resolved.configSource,
    dataFile: resolved.dataFile,
    store: resolved.store,
    port: resolved.port,
    host: resolved.host,
    env: resolved.env,
    seed,
    logger,
    lockStaleMs: lockStaleFromEnv(env),
    limits: resolved.limits,
    admin: resolved.admin,
    adminSource: ADMIN_KEY_ENV,
  };
}

export function describeStartError(err: unknown): string {
  if (err instanceof ConfigError) return err.message;
  if (err instanceof StoreOpenError || err instanceof StartError || err instanceof UsageError) return err.message;
  if (err instanceof Error) return err.message;
  return String(err);
}
