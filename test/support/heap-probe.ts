// Loaded into a bundle under test, never into the service otherwise: `liveHeap()` below
// starts the server with this module preloaded (NODE_OPTIONS `--import`). On SIGUSR2 it forces
// full garbage collections and writes one stderr line with what is left on the heap: what the
// server holds live, whatever V8's heap sizing policy (which differs between Node releases) does
// with the garbage. The service itself installs no SIGUSR2 handler.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as (options?: unknown) => void;

process.on('SIGUSR2', () => {
  // Twice: the first collection may leave objects that only finalizers or weak callbacks free.
  gc();
  gc();
  const m = process.memoryUsage();
  process.stderr.write(`heap-probe ${JSON.stringify({ heapUsed: m.heapUsed, external: m.external, arrayBuffers: m.arrayBuffers, rss: m.rss })}\n`);
});
