// The command line's side of --workers N (src/cluster/): the pieces of a process's life the
// command line owns, handed to the primary and to each worker so that the cluster needs no
// import of the command line.
import type { CommandLine } from '../cluster/index.js';
import type { Io, Resolved } from './args.js';
import { startLine } from './places.js';
import { readSeedFile } from './seed.js';
import { onSignals } from './signals.js';
import { describeStartError, startOptions } from './start-options.js';
import { settleThenExit } from './stdio-exit.js';

export function clusterCli(resolved: Resolved, io: Io): CommandLine {
  return {
    io,
    startLine: () => startLine(resolved),
    startOptions: (env, logger, seed) => startOptions(resolved, env, logger, seed),
    readSeedFile,
    describeStartError,
    onSignals,
    settleThenExit,
  };
}
