// The bundle's entry and the library's face: importing it starts nothing; running it
// (node dist/petstore.js) runs the command line.
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { main } from './cli/index.js';

export { startPetstore, StartError } from './server/index.js';
export type { StartErrorKind } from './server/index.js';
export type { StartOptions, PetstoreHandle, LogFunction, HarnessClock, JournalQuery, JournalRequest, JournalPage } from './server/index.js';
export { ConfigError } from './config/index.js';
export type { ClearKeyConfig, DigestKeyConfig, KeyConfig, PetstoreConfig, PlanLimits } from './config/index.js';
export type { Pet, NewPet, PetStatus, Clock, Logger, LogLevel } from './core/index.js';
export { ManualClock } from './core/index.js';

/**
 * This file's own path, from the stack (a path when node loaded it as CommonJS, a file: URL as
 * an ES module): the bundle has no import.meta (it runs as either, see build.mjs).
 */
function ownFile(): string | undefined {
  const { prepareStackTrace, stackTraceLimit } = Error;
  try {
    Error.prepareStackTrace = (_err, sites) => sites;
    Error.stackTraceLimit = 1;
    const holder: { stack?: unknown } = {};
    Error.captureStackTrace(holder, ownFile);
    const name = (holder.stack as NodeJS.CallSite[] | undefined)?.[0]?.getFileName();
    return name?.startsWith('file:') === true ? fileURLToPath(name) : (name ?? undefined);
  } finally {
    Error.prepareStackTrace = prepareStackTrace;
    Error.stackTraceLimit = stackTraceLimit;
  }
}

function isEntryPoint(): boolean {
  const script = process.argv[1];
  const self = ownFile();
  if (script === undefined || self === undefined) return false;
  try {
    return realpathSync(script) === realpathSync(self);
  } catch {
    return false; // argv[1] is not a file (e.g. node -e): then we were imported
  }
}

if (isEntryPoint()) {
  main(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
}
