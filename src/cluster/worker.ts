// One worker of --workers N: the same server as one process, on the port the primary holds
// for all (node:cluster), with a line to the other workers (metrics, faults). The primary
// prints the ready line; a worker says it is listening and holds its log lines until the
// primary has printed it. It stops when the primary says so, on SIGTERM, or when the primary
// is gone; SIGINT (a terminal's Ctrl-C reaches every process of the group) is left to the
// primary, which stops every worker.
import cluster from 'node:cluster';
import { batchingSink, jsonLogger, reporter, safeStderr, safeStdoutBytes, wholeLines } from '../core/index.js';
import { startWithConfig, type PetstoreHandle } from '../server/index.js';
import type { ClusterOptions, CommandLine } from './contract.js';
import { WorkerPeers } from './peers.js';
import { isPrimaryMessage, type WorkerMessage } from './protocol.js';

/** Set by the primary in its workers' environment (with the two below). */
export const WORKER_ENV = 'PETSTORE_CLUSTER_WORKER';
/** The port to listen on when the primary has learned it (after every worker of a --port 0 start died). */
export const PORT_ENV = 'PETSTORE_CLUSTER_PORT';
/** The worker's number, 1..N, kept across its restarts (for messages). */
export const SLOT_ENV = 'PETSTORE_CLUSTER_SLOT';
/** "1" in the first worker of a start only: it adds the --seed pets, once for the service. */
export const SEED_ENV = 'PETSTORE_CLUSTER_SEED';
/** The primary's count of SIGHUPs when it forked this worker (its config read is newer). */
export const GENERATION_ENV = 'PETSTORE_CLUSTER_GENERATION';

export function isClusterWorker(env: NodeJS.ProcessEnv): boolean {
  return cluster.isWorker && env[WORKER_ENV] === '1';
}

export async function runWorker(resolved: ClusterOptions, env: NodeJS.ProcessEnv, cli: CommandLine): Promise<number> {
  const { io, describeStartError, onSignals, settleThenExit } = cli;
  const id = env[SLOT_ENV] ?? String(cluster.worker?.id ?? 0);
  const say = (line: string): void => io.err(`petstore: worker ${id}: ${line}`);
  const out = batchingSink(wholeLines(safeStdoutBytes()));
  const logger = jsonLogger(resolved.logLevel, out.sink);
  const report = reporter(logger, io, `petstore: worker ${id}: `);
  const peers = new WorkerPeers();
  let handle: PetstoreHandle | undefined;
  let stopRequested = false;
  let finish: (code: number) => void = () => undefined;
  const finished = new Promise<number>((resolve) => { finish = resolve; });

  let stopAt = 0;
  const stop = (why: string): void => {
    if (stopRequested) return;
    stopRequested = true;
    stopAt = performance.now();
    if (handle === undefined) return; // still starting: stopped as soon as it is up
    if (why !== 'stop') report('info', `${why}, finishing in-flight requests`);
    handle.close().then(
      () => finish(0),
      (err: unknown) => {
        const reason = describeStartError(err);
        report('error', 'error while stopping', { reason }, reason);
        finish(1);
      },
    );
  };
  // The config read at start covers the SIGHUPs counted at the fork; `heard` is the newest
  // one told since, `covered` the newest one the config in force has seen.
  const forked = Number(env[GENERATION_ENV] ?? 0);
  let heard = forked;
  let covered = forked;
  const reload = (): void => {
    if (handle === undefined) return; // still starting: caught up before it listens (catchUp)
    if (typeof resolved.configSource !== 'string') {
      report('warn', 'reload ignored: running on the built-in config, there is no file to reload');
      return;
    }
    const config = resolved.configSource;
    handle.reload(config).then(
      () => report('info', `config reloaded from ${config}`, { config }),
      (err: unknown) => {
        const reason = describeStartError(err);
        report('error', 'config reload refused, the old config stays in force', { config, reason }, reason);
      },
    );
  };
  const onMessage = (m: unknown): void => {
    if (!isPrimaryMessage(m)) return;
    if (m.petstore === 'release') out.release();
    else if (m.petstore === 'reload') {
      heard = Math.max(heard, m.generation);
      reload();
      if (handle !== undefined) covered = heard;
    }
    else if (m.petstore === 'stop') stop('stop');
  };
  /**
   * Once the backends are open (which may take seconds: an engine slow to answer), before the
   * port is taken: the file is read again, so that a key revoked and a SIGHUP sent while this
   * worker started are in force for its first request. Again while more SIGHUPs come.
   */
  const catchUp = async (apply: () => Promise<void>): Promise<void> => {
    if (typeof resolved.configSource !== 'string') return;
    do {
      const target = heard;
      try {
        await apply();
        if (target > forked) report('info', `config reloaded from ${resolved.configSource} before serving (a SIGHUP came while this worker started)`, { config: resolved.configSource });
      } catch (err) {
        // As a running worker would: the config in force stays (the others refused it too).
        const reason = describeStartError(err);
        if (target > forked) report('error', 'config reload refused, the old config stays in force', { config: resolved.configSource, reason }, reason);
      }
      covered = target;
    } while (covered < heard);
  };
  const onDisconnect = (): void => stop('the primary is gone');
  process.on('message', onMessage);
  // SIGINT is ignored: the primary stops every worker itself.
  const offSignals = onSignals({ SIGTERM: () => stop('SIGTERM received'), SIGINT: () => undefined, SIGHUP: () => reload() });
  process.on('disconnect', onDisconnect);
  const cleanup = (): void => {
    process.off('message', onMessage);
    offSignals();
    process.off('disconnect', onDisconnect);
    peers.close();
    // The IPC channel would keep this process alive: closing it lets it exit. Through the
    // worker, so that node:cluster knows it is wanted: a bare process.disconnect() is taken
    // for a lost primary and exits at once with code 0, whatever this worker returns.
    if (process.connected) cluster.worker?.disconnect();
  };

  try {
    const seed = env[SEED_ENV] === '1' && resolved.seedFile !== undefined ? await cli.readSeedFile(resolved.seedFile) : undefined;
    const port = env[PORT_ENV] === undefined ? resolved.port : Number(env[PORT_ENV]);
    // Every worker shares the store with the others: the command line's count, not the config's.
    handle = await startWithConfig({ ...cli.startOptions(env, logger, seed), port, processes: resolved.workers }, resolved.config, peers, catchUp);
  } catch (err) {
    out.drainTo(safeStderr());
    say(describeStartError(err));
    cleanup();
    return 1;
  }
  // A reload told between the catch-up and the listen: applied now (the primary also tells
  // again one this worker reports not to have seen).
  if (heard > covered) {
    covered = heard;
    reload();
  }
  const ready: WorkerMessage = { petstore: 'ready', url: handle.url, generation: covered };
  if (process.connected) process.send?.(ready);
  if (stopRequested) {
    stopRequested = false;
    stop('stop');
  }
  const code = await finished;
  out.release();
  out.flush();
  cleanup();
  return settleThenExit(code, stopAt);
}
