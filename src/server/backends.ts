// Opening what the service keeps its state in: the store (memory, a data file or PostgreSQL,
// with PostgreSQL's read cache when the limits are in Redis) and the two limiters (in
// process or in Redis), and where the keys' limits outlive a restart. Whatever was opened is
// closed again when a later part fails.
import { Namespaces, NoNamespaces, type Peers } from '../admin/index.js';
import type { Config } from '../config/index.js';
import { StoreGeneration, asStartError, type Logger, type ServiceClock } from '../core/index.js';
import { MemoryLimiter, type Limiter } from '../limits/index.js';
import type { ServiceMetrics } from '../metrics/index.js';
import { ReadCachedStore, hasPageVersion, openFileStore, openMemoryStore, openPostgresStore, type PetStore, type PostgresStore } from '../store/index.js';
import type { StartOptions } from './contract.js';
import { releaseAll } from './lifecycle.js';
import { memoryLimiters, openLimiters, type Limiters } from './limiters.js';

const SAVE_LIMITS_EVERY_MS = 30_000;

export interface Backends {
  readonly store: PetStore;
  readonly keyLimiter: Limiter;
  readonly addressLimiter: Limiter;
  readonly limiters: Limiters;
  /** Closes the store and both limiters, then the Redis connection; rejects with the first failure. */
  close(): Promise<void>;
  /** A start that failed after they opened: closes them, the key limiter's failure ignored. */
  abandon(): Promise<void>;
}

export interface BackendsInput {
  readonly options: StartOptions & { readonly processes?: number };
  readonly config: Config;
  /** The limits URL (already checked), or undefined: in process. */
  readonly limitsUrl: string | undefined;
  readonly clock: ServiceClock;
  readonly logger: Logger;
  readonly metrics: ServiceMetrics | undefined;
}

export async function openBackends(b: BackendsInput): Promise<Backends> {
  const { options, config, limitsUrl, clock, logger, metrics } = b;
  const dataFile = options.dataFile;
  const idempotencyRetentionMs = config.idempotencyRetentionHours * 3_600_000;
  const opened: PetStore = await (options.store !== undefined
    ? openPostgresStore(options.store, { logger, clock, idempotencyRetentionMs, processes: options.processes ?? config.workers })
    : dataFile === undefined
      ? Promise.resolve(openMemoryStore({ clock, idempotencyRetentionMs }))
      : openFileStore(dataFile, {
        logger, lockStaleMs: options.lockStaleMs, maxQueuedWrites: config.maxQueuedWrites, clock, idempotencyRetentionMs, observer: metrics?.store,
      })
  );
  if (metrics !== undefined && hasPageVersion(opened)) metrics.petsStored = () => opened.count;
  // PostgreSQL with limits in Redis: reads that cannot change are served from memory, kept
  // right across processes by the store generation each limiter reply carries (read-cache.ts).
  const generation = options.store !== undefined && limitsUrl !== undefined ? new StoreGeneration() : undefined;
  const limiters = await openLimiters(limitsUrl, config, clock, logger, { generation, clockOffsetMs: () => clock.offsetMs }).catch(async (err: unknown) => {
    await opened.close();
    throw err;
  });
  const store: PetStore = generation === undefined ? opened : new ReadCachedStore(opened as PostgresStore, generation);
  const { keyLimiter, addressLimiter } = limiters;
  return {
    store, keyLimiter, addressLimiter, limiters,
    close: () => releaseAll([() => store.close(), () => keyLimiter.close(), () => addressLimiter.close()]).finally(() => limiters.link?.close()),
    async abandon() {
      await keyLimiter.close().catch(() => undefined);
      await limiters.link?.close();
      await store.close();
    },
  };
}

/**
 * Keys' day buckets and bans outlive a restart in the config's limitsFile, else beside the
 * data file (in Redis they live in Redis); addresses' do not.
 */
export async function keepKeyLimits(backends: Backends, config: Config, options: StartOptions, logger: Logger): Promise<void> {
  const { keyLimiter } = backends;
  const dataFile = options.dataFile;
  const limitsFile = config.limitsFile ?? (dataFile === undefined ? undefined : `${dataFile}.limits.json`);
  if (limitsFile !== undefined && keyLimiter instanceof MemoryLimiter) {
    await keyLimiter.persist(limitsFile, { intervalMs: SAVE_LIMITS_EVERY_MS, logger })
      .catch((err: unknown) => { throw asStartError('limits', err); });
  } else if (options.store !== undefined && keyLimiter instanceof MemoryLimiter) {
    logger.log('warn', 'rate limits are kept in this process only and start full again at every restart ' +
      '(set "limitsFile" in the config to keep them in a file, or "limits" to keep them in Redis)');
  }
}

/**
 * The namespaces' worlds (admin.namespaces above 0), each made on first use by the factories
 * the root's in-memory store and limiters come from: whatever the root keeps its pets and
 * limits in, a namespace keeps them in memory. With --workers each worker would hold a world
 * of its own, and a test's requests reach any worker: then every use is a 501 saying so.
 */
export function openNamespaces(config: Config, clock: ServiceClock, peers: Peers | undefined): Namespaces | NoNamespaces | undefined {
  const bound = config.admin?.namespaces ?? 0;
  if (bound === 0) return undefined;
  if (peers !== undefined) {
    return new NoNamespaces('the service runs with --workers, and a namespace kept in one worker would not be seen by the requests the others serve; run one process for parallel tests');
  }
  const idempotencyRetentionMs = config.idempotencyRetentionHours * 3_600_000;
  return new Namespaces({
    bound,
    journalSize: config.admin?.journal ?? 1000,
    rootClock: clock,
    open: (worldClock) => ({ store: openMemoryStore({ clock: worldClock, idempotencyRetentionMs }), ...memoryLimiters(config, worldClock) }),
  });
}
