// What `--workers N` is given by the command line, which runs it: the options the command
// line resolved (flag > environment > config), and the parts of a process's life that the
// command line owns (its two output lines, signals, the end of a stop, the start line, the
// server's options). The cluster uses them without importing the command line.
import type { Config, PetstoreConfig } from '../config/index.js';
import type { Logger, NewPet } from '../core/index.js';
import type { StartOptions } from '../server/index.js';

/** Pets to add at start, as a seed file gives them. */
export type SeedPets = ReadonlyArray<NewPet & { id?: number }>;

/** The command line's stdout and stderr, a line at a time. */
export interface Io {
  out(line: string): void;
  err(line: string): void;
}

/** The resolved options the primary and its workers read. */
export interface ClusterOptions {
  readonly config: Config;
  /** A file path (what a SIGHUP re-reads), or the built-in config (nothing to reload). */
  readonly configSource: string | PetstoreConfig;
  readonly port: number;
  readonly logLevel: Config['logLevel'];
  readonly seedFile: string | undefined;
  /** Processes sharing the port. */
  readonly workers: number;
}

export interface SignalHandlers {
  readonly SIGTERM: () => void;
  readonly SIGINT: () => void;
  readonly SIGHUP: () => void;
}

/** The command line's side of a run of --workers N. */
export interface CommandLine {
  readonly io: Io;
  /** The one start line on stderr (before the ready line on stdout). */
  startLine(): string;
  /** What a worker starts its server with. */
  startOptions(env: NodeJS.ProcessEnv, logger: Logger, seed: SeedPets | undefined): StartOptions;
  readSeedFile(file: string): Promise<SeedPets>;
  /** A start or stop error as one line. */
  describeStartError(err: unknown): string;
  /** Installs the three handlers at once; returns their removal. */
  onSignals(handlers: SignalHandlers): () => void;
  /** Resolves with `code` once stdout and stderr are drained (bounded: exits if they never are). */
  settleThenExit(code: number, stopStartedAt: number): Promise<number>;
}
