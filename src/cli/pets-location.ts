// Where pets live: a store URL, a data file, or memory. One question, so the
// usual precedence (flag > environment > config) picks one answer, and two answers at the
// same level are a usage error that says so (returned as its message: args.ts throws it).
import { resolve } from 'node:path';
import type { Config } from '../config/index.js';
import { isPostgresUrl } from '../store/index.js';

export interface PetsLocation {
  /** A postgres:// URL, or undefined. */
  readonly store: string | undefined;
  /** An absolute path, or undefined (memory, or the store). */
  readonly dataFile: string | undefined;
}

function checkedUrl(url: string, where: string): PetsLocation | string {
  if (!isPostgresUrl(url)) return `${where} must be a PostgreSQL URL, postgres://user:password@host:5432/database`;
  return { store: url, dataFile: undefined };
}

/** The answer, or the usage error's message. */
export function petsLocation(
  flags: Readonly<Record<string, string | boolean | undefined>>, env: NodeJS.ProcessEnv, config: Config,
): PetsLocation | string {
  const storeFlag = typeof flags.store === 'string' ? flags.store : undefined;
  const dataFlag = typeof flags.data === 'string' ? flags.data : undefined;
  if (storeFlag !== undefined && (dataFlag !== undefined || flags.memory)) {
    return `--store cannot be used with ${dataFlag !== undefined ? '--data' : '--memory'}: pets live in PostgreSQL or in a data file`;
  }
  if (storeFlag !== undefined) return checkedUrl(storeFlag, '--store');
  if (flags.memory) return { store: undefined, dataFile: undefined };
  if (dataFlag !== undefined) return { store: undefined, dataFile: resolve(dataFlag) };
  const storeEnv = env.PETSTORE_STORE || undefined;
  const dataEnv = env.PETSTORE_DATA || undefined;
  if (storeEnv !== undefined && dataEnv !== undefined) {
    return 'PETSTORE_STORE and PETSTORE_DATA cannot both be set: pets live in PostgreSQL or in a data file';
  }
  if (storeEnv !== undefined) return checkedUrl(storeEnv, 'PETSTORE_STORE');
  if (dataEnv !== undefined) return { store: undefined, dataFile: resolve(dataEnv) };
  return { store: config.store, dataFile: config.dataFile };
}

/** Which flag or variable gave the store URL petsLocation chose; undefined: the config file. */
export function storeSetting(flags: Readonly<Record<string, string | boolean | undefined>>, env: NodeJS.ProcessEnv): string | undefined {
  if (typeof flags.store === 'string') return '--store';
  if (env.PETSTORE_STORE) return 'PETSTORE_STORE';
  return undefined;
}
