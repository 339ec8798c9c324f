// Forced garbage collection inside a test's own process (the flag is set at run time, so no
// --expose-gc is needed on the command line), and what stays live after it.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Two full collections: the first may leave objects that only finalizers or weak callbacks free. */
export function collect(): void {
  gc();
  gc();
}

/** The JS heap plus memory outside it held by JS objects (Buffers), after collect(). */
export function liveBytes(): number {
  collect();
  const m = process.memoryUsage();
  return m.heapUsed + m.external;
}
