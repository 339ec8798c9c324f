// startPetstore: config, store, limiters and the HTTP server wired together. Used by the
// command line and by embedders; it holds no module-level state, so several instances can
// run in one process.
import { ServerResponse, createServer, type Server } from 'node:http';
import type { Socket } from 'node:net';
import {
  ADMIN_ROUTES, Faults, ROUTES, RequestJournal, Snapshots, countSlices, journalEntry, mergeSlices, openApiRoute, parseJournalFilter, snapshotsUnavailable,
  type AdminControl, type JournalFilter, type JournalSlice, type SnapshotControl,
} from '../api/index.js';
import { limitsUrlProblem, loadConfigFile, parseConfig, type Config } from '../config/index.js';
import { ApiError, MAX_CLOCK_OFFSET_MS, StoreGeneration, asStartError, functionLogger, jsonLogger, safeStdout, serviceClock, silentLogger, type ServiceClock } from '../core/index.js';
import type { Logger } from '../core/index.js';
import { answerAfterHalfClose, answerClientError, createApp, orderPipelined, refuseConnect, takeTurns } from '../http/index.js';
import { MemoryLimiter, checkConfiguration, type Limiter } from '../limits/index.js';
import { SCRAPE_MAX_AGE_MS, ServiceMetrics, cachedScrape } from '../metrics/index.js';
import { ReadCachedStore, canSnapshot, hasPageVersion, openFileStore, openMemoryStore, openPostgresStore, type PetStore, type PostgresStore } from '../store/index.js';
import { StartError, type JournalQuery, type PetstoreHandle, type StartOptions } from './contract.js';
import { listen, releaseAll, restartOnlyChanges, shutdown } from './lifecycle.js';
import type { Peers } from './peers.js';
import { SharedFaults } from './shared-faults.js';
import { openLimiters } from './limiters.js';

const SAVE_LIMITS_EVERY_MS = 30_000;

async function resolveConfig(source: StartOptions['config'], admin: StartOptions['admin'], adminSource: string): Promise<Config> {
  const defaults = { admin, adminSource };
  if (typeof source === 'string') return loadConfigFile(source, defaults);
  return parseConfig(source ?? {}, 'config object', process.cwd(), defaults);
}

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
  let config = loaded ?? await resolveConfig(options.config, options.admin, options.adminSource ?? 'the admin option');
  // node:cluster forks the running script with its arguments: the command line's, not an
  // embedder's program, which would start again from its top in every worker.
  if (loaded === undefined && config.workers > 1) {
    throw new StartError('config', 'workers is for the command line (node dist/petstore.js --workers N); startPetstore runs one server in this process: run several processes of your own on one store and limits URL instead');
  }
  // The one clock of the service: admin advances, handle.clock and an embedder's ManualClock
  // all move it, and everything that depends on time reads it.
  const clock: ServiceClock = serviceClock(options.clock);
  const logger = resolveLogger(options.logger, config);
  const dataFile = options.dataFile;
  const routes = [...ROUTES, openApiRoute(ROUTES, __PETSTORE_VERSION__)];
  // Applied at start only (a reload that turns them on or off is logged as needing a restart).
  const metrics = config.metrics
    ? new ServiceMetrics({ operations: [...routes.map((r) => r.operationId), 'healthz', ...ADMIN_ROUTES.map((r) => r.operationId)], version: __PETSTORE_VERSION__ })
    : undefined;

  const limitsUrl = options.limits ?? config.limits;
  const limitsProblem = limitsUrl === undefined ? undefined : limitsUrlProblem(limitsUrl);
  if (limitsProblem !== undefined) throw new StartError('config', `the limits URL ${limitsProblem}`);
  if (options.store !== undefined && dataFile !== undefined) throw new StartError('config', 'store and dataFile cannot both be given: pets live in PostgreSQL or in a data file');
  const idempotencyRetentionMs = config.idempotencyRetentionHours * 3_600_000;
  const opened: PetStore = await (options.store !== undefined
    ? openPostgresStore(options.store, { logger, clock, idempotencyRetentionMs, processes: options.processes ?? config.workers })
    : dataFile === undefined
      ? Promise.resolve(openMemoryStore({ clock, idempotencyRetentionMs }))
      : openFileStore(dataFile, {
        logger, lockStaleMs: options.lockStaleMs, maxQueuedWrites: config.maxQueuedWrites, clock, idempotencyRetentionMs, observer: metrics?.store,
      })
  ).catch((err: unknown) => {
    metrics?.close();
    throw err;
  });
  if (metrics !== undefined && hasPageVersion(opened)) metrics.petsStored = () => opened.count;
  // PostgreSQL with limits in Redis: reads that cannot change are served from memory, kept
  // right across processes by the store generation each limiter reply carries (read-cache.ts).
  const generation = options.store !== undefined && limitsUrl !== undefined ? new StoreGeneration() : undefined;
  const faults = peers === undefined ? new Faults() : new SharedFaults(peers);
  if (peers !== undefined && metrics !== undefined) peers.answer('metrics', () => metrics.snapshot());
  const limiters = await openLimiters(limitsUrl, config, clock, logger, { generation, clockOffsetMs: () => clock.offsetMs }).catch(async (err: unknown) => {
    metrics?.close();
    await opened.close();
    throw err;
  });
  const store: PetStore = generation === undefined ? opened : new ReadCachedStore(opened as PostgresStore, generation);
  const { keyLimiter, addressLimiter } = limiters;
  // The request journal of this process (its ring grows as entries come, up to its size; it
  // records only while the config names an admin key and a journal size above 0). Sized at
  // start; without admin then, at the default, for a reload that turns admin on.
  const journal = new RequestJournal(config.admin?.journal ?? 1000);
  const harness = harnessParts({ clock, journal, peers, faults, store, keyLimiter, addressLimiter, postgres: options.store !== undefined });
  /**
   * Empty store, limits and bans cleared, faults cleared: reset() and POST /__admin/reset.
   * The limits go first: in Redis they are the part that can fail, and clearing them harms
   * nothing if the rest then fails. A failure is a 503 that says what was done.
   */
  const resetAll = async (): Promise<void> => {
    let step = 'keys';
    try {
      await keyLimiter.reset();
      step = 'addresses';
      await addressLimiter.reset();
    } catch (err) {
      throw new ApiError('service_unavailable', step === 'keys'
        ? `The reset failed while clearing the rate limits (${messageOf(err)}): some keys' limits may have been cleared; pets, per-address limits and faults are unchanged. Retry later.`
        : `The reset failed while clearing the per-address limits (${messageOf(err)}): the keys' limits were cleared, some per-address limits may have been; pets and faults are unchanged. Retry later.`,
      { 'retry-after': '5' });
    }
    try {
      await store.reset();
    } catch (err) {
      throw new ApiError('service_unavailable', `The reset failed while emptying the store (${messageOf(err)}): the rate limits were cleared, the pets may still be there, faults are unchanged. Retry later.`, { 'retry-after': '5' });
    }
    faults.clear();
    await harness.resetJournalAndClock();
    await keyLimiter.flush().catch((err: unknown) => {
      throw new ApiError('service_unavailable', `The store, rate limits and faults were reset, but the limits file could not be saved (${messageOf(err)}): a restart now would bring the old limits back. Retry later.`, { 'retry-after': '5' });
    });
  };
  const admin: AdminControl = {
    reset: resetAll, seed: (pets) => store.seed(pets), faults,
    faultsShared: faults instanceof SharedFaults ? () => faults.shared() : undefined,
    journal: harness.journal,
    clock: harness.clock,
    snapshots: harness.snapshots,
  };
  let server: Server | undefined;
  // Reloads run one at a time, each reading the file only after the one before is applied:
  // two quick SIGHUPs must leave the file read last in force, never the older one (whose
  // read may finish later). A refused reload does not stop the ones queued after it.
  let reloads: Promise<void> = Promise.resolve();

  /** Reads and checks everything first; then swaps in one step that cannot throw. */
  const applyReload = async (source: StartOptions['config']): Promise<void> => {
    const next = await resolveConfig(source ?? options.config, options.admin, options.adminSource ?? 'the admin option');
    checkConfiguration(next.ban);
    checkConfiguration(next.ban, next.anonymousTableSize);
    const kept = new Set(next.keys.keys());
    const ignored = restartOnlyChanges(config, next);
    config = next;
    if (server !== undefined) server.maxConnections = next.maxConnections;
    // Keys that still exist keep their buckets and bans; revoked keys are forgotten.
    keyLimiter.retain(kept);
    keyLimiter.configure(next.ban);
    addressLimiter.configure(next.ban, next.anonymousTableSize);
    if (ignored.length > 0) logger.log('warn', 'config reloaded; changes to these fields take effect only after a restart', { fields: ignored });
  };

  const reload = (source: StartOptions['config']): Promise<void> => {
    const done = reloads.then(() => applyReload(source));
    reloads = done.catch(() => undefined);
    return done;
  };

  let stopping = false;
  try {
    if (options.seed?.length) await store.seed(options.seed).catch((err: unknown) => { throw asStartError('seed', err); });
    // Keys' day buckets and bans outlive a restart in the config's limitsFile, else beside the
    // data file (in Redis they live in Redis); addresses' do not.
    const limitsFile = config.limitsFile ?? (dataFile === undefined ? undefined : `${dataFile}.limits.json`);
    if (limitsFile !== undefined && keyLimiter instanceof MemoryLimiter) {
      await keyLimiter.persist(limitsFile, { intervalMs: SAVE_LIMITS_EVERY_MS, logger })
        .catch((err: unknown) => { throw asStartError('limits', err); });
    } else if (options.store !== undefined && keyLimiter instanceof MemoryLimiter) {
      logger.log('warn', 'rate limits are kept in this process only and start full again at every restart ' +
        '(set "limitsFile" in the config to keep them in a file, or "limits" to keep them in Redis)');
    }
    const app = createApp({
      store, clock, logger, keyLimiter, addressLimiter, routes, metrics, admin, journal,
      scrape: metrics === undefined ? undefined : cachedScrape(metrics, peers === undefined ? undefined : () => peers.gather('metrics', SCRAPE_MAX_AGE_MS)),
      config: () => config,
      // Read per request, so that a reload that changes the environments moves the links too.
      get publicBase() {
        return options.env ? config.environments[options.env] : undefined;
      },
    });
    // Each connection takes its turn: a few requests per turn of the event loop, a bounded
    // number unanswered (turns.ts); a request pipelined behind a POST is handled once the
    // POST is answered (pipeline.ts).
    const listener = takeTurns(orderPipelined(app));
    server = createServer({
      // Once stopping, every answer closes its connection (requests already in flight too), so
      // that keep-alive clients move on instead of holding the server open until the grace
      // period runs out.
      ServerResponse: closingWhenStopping(() => stopping),
      // Deliberate bounds (see docs/api.md, "Timeouts and limits").
      headersTimeout: 10_000,
      requestTimeout: 30_000,
      keepAliveTimeout: 5_000,
      maxHeaderSize: 16 * 1024,
      // The two timeouts above are enforced by a sweep; at node's default (30 s) a slowloris
      // socket would live up to 40 s instead of 10.
      connectionsCheckingInterval: 1_000,
      // Requests without Host, and unknown Expect values, are answered by the app with an
      // Error body rather than by node:http with an empty one.
      requireHostHeader: false,
    }, listener);
    server.on('checkExpectation', listener);
    // Expect: 100-continue: node:http would send the 100 before the app has looked at the
    // request; readJsonBody sends it once a body is wanted, so a 401 or 413 comes instead.
    server.on('checkContinue', listener);
    // Past it node closes new connections at once: file descriptors stay for the data files.
    server.maxConnections = config.maxConnections;
    // node's default (2000) drops every header after the 2000th from req.headers while its
    // parser still frames the request by them: a Transfer-Encoding, Expect or second Host
    // behind 2000 fillers would go unchecked. The 16 KiB header size bounds the count.
    server.maxHeadersCount = 0;
    // A client may half-close (FIN) once it has sent its requests and still read the answers:
    // each is answered, in order, and the connection closed after the last. By default node
    // stops writing at the FIN, and a create already being stored would never be answered.
    answerAfterHalfClose(server);
    server.on('connect', refuseConnect);
    server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => answerClientError(err, socket));
    // A worker of --workers N catches up with the config here, its backends open and no
    // request served yet: a SIGHUP that came while it started is applied before it listens.
    if (beforeListen !== undefined) await beforeListen(() => reload(options.config));
    // ... and takes over the faults the other workers have armed.
    if (faults instanceof SharedFaults) await faults.shared();
    await listen(server, options.port ?? config.port, options.host ?? config.host);
  } catch (err) {
    server?.close();
    metrics?.close();
    await keyLimiter.close().catch(() => undefined);
    await limiters.link?.close();
    await store.close();
    throw err;
  }

  const address = server.address();
  if (address === null || typeof address === 'string') throw new StartError('listen', 'the server has no TCP address');
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const listening = server;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${host}:${address.port}/v1`,
    port: address.port,
    host: address.address,
    close() {
      stopping = true;
      peers?.close();
      // A request waiting out an injected delay is served now, not after the grace.
      faults.stop();
      closing ??= shutdown(listening, options.shutdownGraceMs ?? 10_000).then(() => {
        metrics?.close();
        return releaseAll([() => store.close(), () => keyLimiter.close(), () => addressLimiter.close()]).finally(() => limiters.link?.close());
      });
      return closing;
    },
    reset: resetAll,
    clock,
    async journal(filter = {}) {
      const parsed = parseJournalFilter(journalQuery(filter));
      if (parsed instanceof ApiError) throw new RangeError(parsed.message);
      const page = await harness.journal.query(parsed);
      if (page instanceof ApiError) throw new RangeError(page.message);
      return { requests: page.records.map(journalEntry), dropped: page.dropped };
    },
    async snapshot(name) {
      const s = harness.snapshots;
      if (typeof s === 'string') throw new Error(s);
      const saved = await s.save(name);
      if (saved instanceof ApiError) throw new Error(saved.message);
      return saved;
    },
    async restore(name) {
      const s = harness.snapshots;
      if (typeof s === 'string') throw new Error(s);
      const done = await s.restore(name);
      if (done instanceof ApiError) throw new Error(done.message);
    },
    async seed(pets) {
      const stored = await store.seed(pets);
      return stored.map((s) => ({ ...s.pet }));
    },
    reload,
  };
}


/**
 * The server's ServerResponse: once `stopping()`, every answer says Connection: close, also
 * the answer of a request that arrived before the stop (a create waiting for its write, a
 * delay fault), so node closes its connection after it. Every answer's head is written
 * through writeHead, node's implicit head included.
 */
function closingWhenStopping(stopping: () => boolean): typeof ServerResponse {
  class ClosingWhenStopping extends ServerResponse {}
  const writeHead = ServerResponse.prototype.writeHead as (this: ServerResponse, ...args: unknown[]) => ServerResponse;
  ClosingWhenStopping.prototype.writeHead = function writeHeadClosing(this: ServerResponse, ...args: unknown[]): ServerResponse {
    if (stopping()) this.setHeader('connection', 'close');
    return writeHead.apply(this, args);
  } as ServerResponse['writeHead'];
  return ClosingWhenStopping as typeof ServerResponse;
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** A journal filter given as an object, as the query of GET /__admin/requests would carry it. */
function journalQuery(filter: JournalQuery): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(filter)) if (value !== undefined) out[name] = String(value);
  return out;
}

/** A journal-slice ask between workers: the filter, and the moment every slice is cut at. */
interface SliceQuery {
  readonly filter: JournalFilter;
  readonly before: number;
}

interface WorkerSlice extends JournalSlice {
  /** The worker's process id: slices are merged in this order. */
  readonly worker: number;
}

/** This worker's entries answered up to `before` (service clock ms), tagged with its process id. */
function workerSlice(slice: JournalSlice, before: number): WorkerSlice {
  return { records: slice.records.filter((r) => r.at <= before), dropped: slice.dropped, worker: process.pid };
}

interface HarnessInput {
  readonly clock: ServiceClock;
  readonly journal: RequestJournal;
  readonly peers: Peers | undefined;
  readonly faults: Faults;
  readonly store: PetStore;
  readonly keyLimiter: Limiter;
  readonly addressLimiter: Limiter;
  readonly postgres: boolean;
}

/**
 * The harness's journal, clock and snapshots. With --workers, a clock move reaches every
 * worker before it resolves, a journal query gathers every worker's matching entries, and a
 * clear empties every worker's ring.
 */
function harnessParts(h: HarnessInput): {
  journal: AdminControl['journal']; clock: AdminControl['clock']; snapshots: SnapshotControl | string; resetJournalAndClock: () => Promise<void>;
} {
  const { clock, journal, peers } = h;
  if (peers !== undefined) {
    peers.answer('journal-slice', (query) => {
      const { filter, before } = query as SliceQuery;
      return workerSlice(journal.slice(filter), before);
    });
    peers.answer('journal-clear', () => {
      journal.clear();
      return true;
    });
    peers.answer('clock-offset', (offset) => {
      if (typeof offset === 'number') clock.restoreOffset(offset);
      return true;
    });
    // An advance is passed on as the step, not the offset it led to: advances answered by
    // different workers at the same time then add up in every worker, whatever the order.
    peers.answer('clock-advance', (ms) => {
      if (typeof ms !== 'number') return false;
      try {
        clock.advance(ms);
      } catch {
        // Past the total bound only through advances that raced each other: at the bound.
        clock.restoreOffset(MAX_CLOCK_OFFSET_MS);
      }
      return true;
    });
  }
  /**
   * Every worker's matching entries. Each worker's slice is cut at the same moment: entries
   * answered up to the millisecond of the ask, taken once that millisecond has passed (an
   * entry's time is that of its answer, so none of them can come later). Without the cut the
   * other workers, which answer a little later than this one takes its own slice, could give
   * a page their newest entries and not this worker's of the same moment, which would then
   * sort before the page's last entry and be skipped by a harness paging forward with since.
   * And the slices go in one order, whichever worker is asked (by process id), so that entries
   * of the same millisecond keep one order from page to page.
   */
  const slices = async (filter: JournalFilter): Promise<JournalSlice[]> => {
    if (peers === undefined) return [journal.slice(filter)];
    const before = clock.now();
    // At most a few ms (a reset meanwhile takes the clock back: not waited for).
    for (let i = 0; i < 5 && clock.now() <= before; i++) await new Promise((resolve) => setTimeout(resolve, 1));
    const own = workerSlice(journal.slice(filter), before);
    const others = await peers.ask('journal-slice', { filter, before } satisfies SliceQuery);
    const all = [own, ...(others.filter((o) => o !== undefined && o !== null) as WorkerSlice[])];
    return all.sort((a, b) => a.worker - b.worker);
  };
  const shareOffset = async (): Promise<void> => {
    if (peers !== undefined) await peers.ask('clock-offset', clock.offsetMs);
  };
  const clearJournal = async (): Promise<void> => {
    journal.clear();
    if (peers !== undefined) await peers.ask('journal-clear');
  };
  return {
    journal: {
      query: async (filter) => mergeSlices(await slices(filter), filter),
      count: async (filter) => countSlices(await slices(filter), filter),
      clear: clearJournal,
    },
    clock: {
      now: () => clock.now(),
      get offsetMs() {
        return clock.offsetMs;
      },
      async advance(ms) {
        clock.advance(ms);
        if (peers !== undefined) await peers.ask('clock-advance', ms);
      },
    },
    snapshots: snapshotsFor(h),
    async resetJournalAndClock() {
      clock.reset();
      await shareOffset();
      await clearJournal();
    },
  };
}

/** Snapshots over this process's store and limiters, or why they cannot be had (a 501's message). */
function snapshotsFor(h: HarnessInput): SnapshotControl | string {
  if (h.postgres) return snapshotsUnavailable('the pets are in PostgreSQL, whose state is not this process\'s to copy').message;
  if (h.peers !== undefined) return snapshotsUnavailable('the service runs with --workers, and each worker holds only part of the rate-limit state').message;
  const { store, keyLimiter, addressLimiter } = h;
  if (!(keyLimiter instanceof MemoryLimiter) || !(addressLimiter instanceof MemoryLimiter)) {
    return snapshotsUnavailable('the rate limits are kept in Redis, whose state is not this process\'s to copy').message;
  }
  if (!canSnapshot(store)) return snapshotsUnavailable('this store cannot take snapshots').message;
  return new Snapshots({ store, limiters: [keyLimiter, addressLimiter], faults: h.faults, clock: h.clock });
}
