// startPetstore: config, store, limiters and the HTTP server wired together. Used by the
// command line and by embedders; it holds no module-level state, so several instances can
// run in one process. Each part is opened in its own file: the backends (backends.ts), the
// admin harness (src/admin/), the config and its reloads (reload.ts), the node:http server
// (node-server.ts).
import { ADMIN_ROUTES, AdminOffError, Namespaces, handleAdmin, harnessFaults, openHarness, type AdminSettings, type Peers } from '../admin/index.js';
import { ROUTES, openApiRoute } from '../api/index.js';
import { limitsUrlProblem, type Config } from '../config/index.js';
import { ApiError, asStartError, functionLogger, jsonLogger, safeStdout, serviceClock, silentLogger, type ServiceClock } from '../core/index.js';
import type { Logger } from '../core/index.js';
import { createApp, orderPipelined, takeTurns } from '../http/index.js';
import { SCRAPE_MAX_AGE_MS, ServiceMetrics, cachedScrape } from '../metrics/index.js';
import { keepKeyLimits, openBackends, openNamespaces } from './backends.js';
import { StartError, type PetstoreHandle, type StartOptions } from './contract.js';
import { listen, shutdown } from './lifecycle.js';
import { nodeServer } from './node-server.js';
import { ConfigInForce, resolveConfig } from './reload.js';

function resolveLogger(option: StartOptions['logger'], config: Config): Logger {
  if (option === undefined || option === false) return silentLogger;
  if (option === 'stdout') return jsonLogger(config.logLevel, safeStdout());
  if (typeof option === 'function') return functionLogger(option);
  return option;
}

export function startPetstore(options: StartOptions = {}): Promise<PetstoreHandle> {
  return startWithConfig(options, undefined);
}

/**
 * How many processes of the service share its store: a worker of --workers N says N (the
 * command line's count, which the config file may not hold). Above 1, each process keeps one
 * batch of creates in flight instead of two (store/postgres/create-batch.ts). Default: the
 * config's `workers`.
 */
export interface ProcessCount {
  readonly processes?: number;
  /** How messages name `admin` (the command line's: PETSTORE_ADMIN_KEY). Default: the admin option. */
  readonly adminSource?: string;
}

/**
 * startPetstore, with the config already read and checked when the caller had to read it
 * first (the command line, for its port and data file): a file is read once at start.
 * options.config still names what a reload re-reads. beforeListen (a worker of --workers N)
 * runs once the backends are open, before the port is taken, with the reload to catch up with.
 */
export async function startWithConfig(
  options: StartOptions & ProcessCount, loaded: Config | undefined, peers?: Peers, beforeListen?: (reload: () => Promise<void>) => Promise<void>,
): Promise<PetstoreHandle> {
  const adminSource = options.adminSource ?? 'the admin option';
  const config = loaded ?? await resolveConfig(options.config, options.admin, adminSource);
  // node:cluster forks the running script with its arguments: the command line's, not an
  // embedder's program, which would start again from its top in every worker.
  if (loaded === undefined && config.workers > 1) {
    throw new StartError('config', 'workers is for the command line (node dist/petstore.js --workers N); startPetstore runs one server in this process: run several processes of your own on one store and limits URL instead');
  }
  // The one clock of the service: admin advances, handle.clock and an embedder's ManualClock
  // all move it, and everything that depends on time reads it.
  const clock: ServiceClock = serviceClock(options.clock);
  const logger = resolveLogger(options.logger, config);
  const routes = [...ROUTES, openApiRoute(ROUTES, __PETSTORE_VERSION__)];
  // Applied at start only (a reload that turns them on or off is logged as needing a restart).
  const metrics = config.metrics
    ? new ServiceMetrics({ operations: [...routes.map((r) => r.operationId), 'healthz', 'readyz', ...ADMIN_ROUTES.map((r) => r.operationId)], version: __PETSTORE_VERSION__ })
    : undefined;

  const limitsUrl = options.limits ?? config.limits;
  const limitsProblem = limitsUrl === undefined ? undefined : limitsUrlProblem(limitsUrl);
  if (limitsProblem !== undefined) throw new StartError('config', `the limits URL ${limitsProblem}`);
  if (options.store !== undefined && options.dataFile !== undefined) throw new StartError('config', 'store and dataFile cannot both be given: pets live in PostgreSQL or in a data file');
  const faults = harnessFaults(peers);
  if (peers !== undefined && metrics !== undefined) peers.answer('metrics', () => metrics.snapshot());
  const backends = await openBackends({ options, config, limitsUrl, clock, logger, metrics }).catch((err: unknown) => {
    metrics?.close();
    throw err;
  });
  const { store, keyLimiter, addressLimiter } = backends;
  // Sized at start; without admin then, at the default, for a reload that turns admin on.
  const namespaces = openNamespaces(config, clock, peers);
  const harness = openHarness({
    clock, faults, journalSize: config.admin?.journal ?? 1000, peers, store, keyLimiter, addressLimiter, postgres: options.store !== undefined, namespaces,
  });
  const worlds = namespaces instanceof Namespaces ? () => namespaces.worlds() : undefined;
  const inForce = new ConfigInForce(config, { source: options.config, admin: options.admin, adminSource, keyLimiter, addressLimiter, logger, worlds });
  const reload = (source: StartOptions['config']): Promise<void> => inForce.reload(source);

  let stopping = false;
  try {
    if (options.seed?.length) await store.seed(options.seed).catch((err: unknown) => { throw asStartError('seed', err); });
    await keepKeyLimits(backends, config, options, logger);
    const app = createApp({
      readiness: () => (stopping ? 'This instance is stopping: requests in flight finish, new ones should go elsewhere.' : undefined),
      store, clock, logger, keyLimiter, addressLimiter, routes, metrics, admin: harness.control, journal: harness.journal, namespaces,
      scrape: metrics === undefined ? undefined : cachedScrape(metrics, peers === undefined ? undefined : () => peers.gather('metrics', SCRAPE_MAX_AGE_MS)),
      config: () => inForce.config,
      // Read per request, so that a reload that changes the environments moves the links too.
      get publicBase() {
        return options.env ? inForce.config.environments[options.env] : undefined;
      },
    });
    // Each connection takes its turn: a few requests per turn of the event loop, a bounded
    // number unanswered (turns.ts); a request pipelined behind a POST is handled once the
    // POST is answered (pipeline.ts).
    const turns = takeTurns(orderPipelined(app));
    inForce.server = nodeServer(turns, config.maxConnections, () => stopping);
    // New connections take turns too: a few start being read per turn.
    inForce.server.on('connection', turns.admit);
    // A worker of --workers N catches up with the config here, its backends open and no
    // request served yet: a SIGHUP that came while it started is applied before it listens.
    if (beforeListen !== undefined) await beforeListen(() => reload(options.config));
    // ... and takes over the faults the other workers have armed.
    await harness.ready();
    await listen(inForce.server, options.port ?? inForce.config.port, options.host ?? inForce.config.host);
  } catch (err) {
    inForce.server?.close();
    metrics?.close();
    await backends.abandon();
    throw err;
  }

  const listening = inForce.server;
  const address = listening.address();
  if (address === null || typeof address === 'string') throw new StartError('listen', 'the server has no TCP address');
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${host}:${address.port}/v1`,
    port: address.port,
    host: address.address,
    close() {
      stopping = true;
      peers?.close();
      // A request waiting out an injected delay is served now, not after the grace.
      harness.stop();
      if (namespaces instanceof Namespaces) namespaces.stop();
      closing ??= shutdown(listening, options.shutdownGraceMs ?? 10_000).then(async () => {
        metrics?.close();
        if (namespaces instanceof Namespaces) await namespaces.close();
        return backends.close();
      });
      return closing;
    },
    reset: () => harness.reset(),
    clock,
    // The journal, faults and snapshots, as over /__admin; a feature the config has off throws.
    ...handleAdmin(harness, () => adminSettings(inForce.config), routes.map((r) => r.operationId)),
    async seed(pets) {
      const stored = await store.seed(pets);
      return stored.map((s) => ({ ...s.pet }));
    },
    reload,
    namespace(name) {
      // Made by its first use, as by a first request; off (no admin.namespaces) or past the bound: said so.
      if (namespaces === undefined) throw new AdminOffError('namespaces', 'Namespaces are off: the config has no "admin": {"namespaces": N} (N from 1 to 10000).');
      const world = namespaces.select(name);
      if (world instanceof ApiError) throw world.status === 400 ? new RangeError(world.message) : new Error(world.message);
      return {
        name: world.name,
        url: `http://${host}:${address.port}${world.prefix}/v1`,
        clock: world.clock,
        reset: () => world.harness.reset(),
        ...handleAdmin(world.harness, () => adminSettings(inForce.config), routes.map((r) => r.operationId)),
        async seed(pets) {
          const stored = await world.store.seed(pets);
          return stored.map((s) => ({ ...s.pet }));
        },
      };
    },
  };
}

/** What the handle's admin features check at each call: admin on, and the journal's size. */
function adminSettings(config: Config): AdminSettings {
  return { on: config.admin !== undefined, journal: config.admin?.journal ?? 0 };
}
