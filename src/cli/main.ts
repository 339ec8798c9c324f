// The command line: parse flags, apply the precedence flag > environment > config file >
// default, start the server, print the ready line, and handle signals.
// main() returns an exit code; nothing in here calls process.exit.
import cluster from 'node:cluster';
import { batchingSink, jsonLogger, reporter, safeStderr, safeStdoutBytes, stdoutLine, type Report } from '../core/index.js';
import { isClusterWorker, runPrimary, runWorker } from '../cluster/index.js';
import { startWithConfig, type PetstoreHandle } from '../server/index.js';
import { USAGE, UsageError, inMemoryWarning, invokedAs, parse, resolveOptions, type Io, type Resolved } from './args.js';
import { clusterCli } from './cluster-cli.js';
import { runKeys } from './keys.js';
import { readSeedFile } from './seed.js';
import { describeStartError, startOptions } from './start-options.js';
import { onSignals } from './signals.js';
import { startLine } from './places.js';
import { settleThenExit } from './stdio-exit.js';

const processIo: Io = {
  // A closed pipe on either must not stop the service (see stdio.ts).
  out: (line) => stdoutLine()(`${line}\n`),
  err: (line) => safeStderr()(`${line}\n`),
};

export async function main(argv: readonly string[], env: NodeJS.ProcessEnv = process.env, io: Io = processIo): Promise<number> {
  if (argv[0] === 'keys') return runKeys(argv.slice(1), env, io);
  let resolved: Resolved;
  try {
    const parsed = parse(argv);
    if (parsed === 'help') {
      io.out(USAGE.replaceAll('node dist/petstore.js', invokedAs(process.argv[1])));
      return 0;
    }
    if (parsed === 'version') {
      io.out(__PETSTORE_VERSION__);
      return 0;
    }
    resolved = await resolveOptions(parsed, env, io);
  } catch (err) {
    io.err(`petstore: ${describeStartError(err)}`);
    return err instanceof UsageError ? 2 : 1;
  }
  // --workers N: this process supervises N workers (src/cluster/), each of which comes back here.
  if (isClusterWorker(env)) return runWorker(resolved, env, clusterCli(resolved, io));
  if (resolved.workers > 1 && cluster.isPrimary) return runPrimary(argv, resolved, clusterCli(resolved, io));

  let handle: PetstoreHandle;
  const out = batchingSink(safeStdoutBytes());
  const logger = jsonLogger(resolved.logLevel, out.sink);
  try {
    const seed = resolved.seedFile === undefined ? undefined : await readSeedFile(resolved.seedFile);
    // The config was read to resolve the options: the server starts with it, not a second read.
    handle = await startWithConfig(startOptions(resolved, env, logger, seed), resolved.config);
  } catch (err) {
    out.drainTo(safeStderr());
    io.err(`petstore: ${describeStartError(err)}`);
    return 1;
  }
  const memoryWarning = inMemoryWarning(resolved);
  if (memoryWarning !== undefined) logger.log('warn', memoryWarning); // held until after the ready line
  // The handlers go in before the ready line: a harness may send SIGTERM the moment it reads
  // the line, and a signal without a handler would kill the process instead of stopping it.
  const signals = waitForSignals(handle, resolved, reporter(logger, io, 'petstore: '));
  io.err(startLine(resolved));
  io.out(`petstore listening on ${handle.url}`);
  out.release();
  const { code, at } = await signals;
  out.flush();
  return settleThenExit(code, at);
}

/** Serve until SIGTERM or SIGINT (resolves with the exit code and when the stop began); SIGHUP reloads the config file (a bad one is refused). */
function waitForSignals(handle: PetstoreHandle, resolved: Resolved, report: Report): Promise<{ code: number; at: number }> {
  return new Promise((done) => {
    let stopping = false;
    const stop = (signal: string): void => {
      if (stopping) return;
      stopping = true;
      const at = performance.now();
      report('info', `${signal} received, finishing in-flight requests`, { signal });
      handle.close().then(
        () => done({ code: 0, at }),
        (err: unknown) => {
          const reason = describeStartError(err);
          report('error', 'error while stopping', { signal, reason }, reason);
          done({ code: 1, at });
        },
      );
    };
    const reload = (): void => {
      if (typeof resolved.configSource !== 'string') {
        report('warn', 'SIGHUP ignored: running on the built-in config, there is no file to reload', { signal: 'SIGHUP' });
        return;
      }
      const config = resolved.configSource;
      handle.reload(config).then(
        () => report('info', `config reloaded from ${config}`, { signal: 'SIGHUP', config }),
        (err: unknown) => {
          const reason = describeStartError(err);
          report('error', 'config reload refused, the old config stays in force', { signal: 'SIGHUP', config, reason }, reason);
        },
      );
    };
    // The handlers stay until the process exits: a second SIGTERM while the output settles is
    // ignored (stop runs once) instead of ending the process by the signal, exit code lost.
    onSignals({ SIGTERM: () => stop('SIGTERM'), SIGINT: () => stop('SIGINT'), SIGHUP: reload });
  });
}
