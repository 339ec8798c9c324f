// The config in force and its reloads (SIGHUP, handle.reload): reads and checks everything
// first, then swaps in one step that cannot throw. Reloads run one at a time, each reading
// the file only after the one before is applied: two quick SIGHUPs must leave the file read
// last in force, never the older one (whose read may finish later). A refused reload does
// not stop the ones queued after it.
import type { Server } from 'node:http';
import { loadConfigFile, parseConfig, type Config } from '../config/index.js';
import type { Logger } from '../core/index.js';
import { checkConfiguration, type Limiter } from '../limits/index.js';
import type { StartOptions } from './contract.js';
import { restartOnlyChanges } from './lifecycle.js';

export async function resolveConfig(source: StartOptions['config']): Promise<Config> {
  if (typeof source === 'string') return loadConfigFile(source);
  return parseConfig(source ?? {}, 'config object', process.cwd());
}

export interface ReloadParts {
  /** What a reload without a source re-reads: the config the service started with. */
  readonly source: StartOptions['config'];
  readonly keyLimiter: Limiter;
  readonly addressLimiter: Limiter;
  readonly logger: Logger;
  /** The namespaces' limiters, reconfigured with the root's. */
  readonly worlds?: () => Iterable<{ readonly keyLimiter: Limiter; readonly addressLimiter: Limiter }>;
}

export class ConfigInForce {
  #config: Config;
  #reloads: Promise<void> = Promise.resolve();
  readonly #parts: ReloadParts;
  /** Set once the server exists: a reload applies maxConnections to it. */
  server: Server | undefined;

  constructor(config: Config, parts: ReloadParts) {
    this.#config = config;
    this.#parts = parts;
  }

  get config(): Config {
    return this.#config;
  }

  reload(source: StartOptions['config']): Promise<void> {
    const done = this.#reloads.then(() => this.#apply(source));
    this.#reloads = done.catch(() => undefined);
    return done;
  }

  async #apply(source: StartOptions['config']): Promise<void> {
    const { keyLimiter, addressLimiter, logger } = this.#parts;
    const next = await resolveConfig(source ?? this.#parts.source);
    checkConfiguration(next.ban);
    checkConfiguration(next.ban, next.anonymousTableSize);
    const kept = new Set(next.keys.keys());
    const ignored = restartOnlyChanges(this.#config, next);
    this.#config = next;
    if (this.server !== undefined) this.server.maxConnections = next.maxConnections;
    // Keys that still exist keep their buckets and bans; revoked keys are forgotten.
    for (const limiters of [{ keyLimiter, addressLimiter }, ...(this.#parts.worlds?.() ?? [])]) {
      limiters.keyLimiter.retain(kept);
      limiters.keyLimiter.configure(next.ban);
      limiters.addressLimiter.configure(next.ban, next.anonymousTableSize);
    }
    if (ignored.length > 0) logger.log('warn', 'config reloaded; changes to these fields take effect only after a restart', { fields: ignored });
  }
}
