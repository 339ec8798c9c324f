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

function isEntryPoint(): boolean {
  const script = process.argv[1];
  if (script === undefined) return false;
  try {
    return realpathSync(script) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false; // argv[1] is not a file (e.g. node -e): then we were imported
  }
}

if (isEntryPoint()) {
  main(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
}
