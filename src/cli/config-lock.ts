// One `keys` change at a time on a config file. Each change reads the file, edits its text
// and renames a new file into place; two at once would each rename their own edit, and the
// second would silently undo the first (a key printed but not in the file, a revoke undone).
// So a change holds `<config>.lock` from its read to its rename: the data file's lock
// (store/file/lock.ts), created with O_EXCL and kept alive by a heartbeat, so that a lock
// left by a run that died is taken over (at once when its pid is gone on this machine, else
// once its heartbeat has stopped for DEFAULT_LOCK_STALE_MS).
import { setTimeout as sleep } from 'node:timers/promises';
import { describeError, functionLogger, type Logger } from '../core/index.js';
import { acquireLock, LockHeldError, type DataLock } from '../store/index.js';

/** How long a change waits for another one to finish before it gives up. */
export const CONFIG_LOCK_WAIT_MS = 5_000;

/** The lock could not be had; nothing was written. */
export class ConfigLockError extends Error {}

/** The config's lock, taken: waits up to CONFIG_LOCK_WAIT_MS while a live run holds it. */
export async function lockConfig(file: string, say: (line: string) => void): Promise<DataLock> {
  const path = `${file}.lock`;
  const logger = lockLogger(say);
  const deadline = performance.now() + CONFIG_LOCK_WAIT_MS;
  for (;;) {
    try {
      return await acquireLock(path, { logger });
    } catch (err) {
      if (!(err instanceof LockHeldError)) {
        throw new ConfigLockError(`${file}: cannot take its lock ${path}: ${describeError(err)}; nothing written`);
      }
      if (performance.now() >= deadline) {
        throw new ConfigLockError(`${file} is being changed by ${err.holder}: its lock ${path} is held; nothing written, try again ` +
          '(a lock left by a run that died is taken over once its holder is gone)');
      }
      // Another change holds it for a few milliseconds; a jitter keeps waiters from moving in step.
      await sleep(10 + Math.random() * 40);
    }
  }
}

/** The lock's messages, in the words of the keys command. */
function lockLogger(say: (line: string) => void): Logger {
  return functionLogger((_level, msg, fields) => {
    if (msg === 'taking over a stale data file lock') {
      say(`petstore keys: taking over the stale lock ${String(fields?.lock)} (${String(fields?.reason)})`);
      return;
    }
    say(`petstore keys: ${msg.replace('data file lock', 'config file lock')}${fields === undefined ? '' : ` ${JSON.stringify(fields)}`}`);
  });
}
