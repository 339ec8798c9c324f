// What a bundle under test holds live, read after a forced full garbage collection: a memory
// check that fails on a leak on every Node release, where a bound on RSS or on a peak depends on
// when that release's V8 chooses to collect. Start the bundle with `env: LIVE_HEAP_ENV` (merged
// with any NODE_OPTIONS of the test), then `await liveHeap(srv)`.
import { until } from './wait.js';

const PROBE = new URL('./heap-probe.js', import.meta.url).href;

/** The environment that loads the probe; `nodeOptions` are added to NODE_OPTIONS. */
export function liveHeapEnv(nodeOptions = ''): NodeJS.ProcessEnv {
  return { NODE_OPTIONS: `${nodeOptions} --import ${PROBE}`.trim() };
}

export interface LiveHeap {
  /** V8 heap in use after the collections, bytes. */
  readonly heapUsed: number;
  /** Memory of Buffers and other objects outside the V8 heap held by JS objects, bytes. */
  readonly external: number;
  /** RSS at the same moment (diagnostics only). */
  readonly rss: number;
}

const LINE = /^heap-probe (\{.*\})$/gm;

/** Signals the server's probe and waits for its answer (the server must run with liveHeapEnv()). */
export async function liveHeap(srv: { proc: { pid?: number; kill(signal: NodeJS.Signals): boolean }; stderr(): string }): Promise<LiveHeap> {
  const seen = [...srv.stderr().matchAll(LINE)].length;
  srv.proc.kill('SIGUSR2');
  let found: LiveHeap | undefined;
  await until('the heap probe answers SIGUSR2 (is the server started with liveHeapEnv()?)', () => {
    const lines = [...srv.stderr().matchAll(LINE)];
    if (lines.length <= seen) return false;
    found = JSON.parse(lines[lines.length - 1]?.[1] ?? '{}') as LiveHeap;
    return true;
  });
  return found as LiveHeap;
}

/** heapUsed + external in MiB, one decimal: the figure the checks bound. */
export const liveMiB = (h: LiveHeap): number => Math.round((h.heapUsed + h.external) / 104857.6) / 10;
