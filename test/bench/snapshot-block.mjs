// How long a named snapshot of many pets holds the event loop, and what it costs in heap.
// Run after `node build.mjs --tests`:
//   node --expose-gc test/bench/snapshot-block.mjs [--pets 1000000]
// Prints the longest event-loop block (perf_hooks.monitorEventLoopDelay, 1 ms resolution)
// while saving and while restoring, and the heap the snapshot holds once saved.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { pets: { type: 'string', default: '1000000' }, addresses: { type: 'string', default: '100000' } } });
const count = Number(values.pets);
const root = new URL('../../build/src/', import.meta.url).href;
const { openMemoryStore } = await import(`${root}store/index.js`);
const { Faults, Snapshots } = await import(`${root}api/index.js`);
const { MemoryLimiter } = await import(`${root}limits/index.js`);
const { ManualClock } = await import(`${root}core/index.js`);

const gc = globalThis.gc ?? (() => undefined);
const mib = (n) => `${(n / 1048576).toFixed(1)} MiB`;
const clock = new ManualClock();
const store = openMemoryStore({ clock });
const limiters = [new MemoryLimiter({ clock, ban: { after: 20, seconds: 300 } }), new MemoryLimiter({ clock, ban: { after: 20, seconds: 300 }, maxEntries: 100_000 })];
for (let i = 0; i < 1000; i++) limiters[0].take(`key-${i}`, { perMinute: 60, perDay: 1000 });
for (let i = 0; i < Number(values.addresses); i++) limiters[1].take(`10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`, { perMinute: 30, perDay: 500 });
const statuses = ['available', 'pending', 'sold', undefined];
for (let start = 0; start < count; start += 100_000) {
  await store.seed(Array.from({ length: Math.min(100_000, count - start) }, (_, i) => ({ name: `Pet ${start + i}`, categoryId: i, status: statuses[i % 4] })));
}
const snapshots = new Snapshots({ store, limiters, faults: new Faults(), clock });

async function measure(label, fn) {
  gc();
  const before = process.memoryUsage().heapUsed;
  const h = monitorEventLoopDelay({ resolution: 1 });
  h.enable();
  await new Promise((resolve) => setTimeout(resolve, 10));
  const started = performance.now();
  await fn();
  const took = performance.now() - started;
  // One more turn, so that a block at the very end is seen by the histogram's timer too.
  await new Promise((resolve) => setTimeout(resolve, 10));
  h.disable();
  const held = process.memoryUsage().heapUsed - before;
  gc();
  const kept = process.memoryUsage().heapUsed - before;
  console.log(`${label}: ${count} pets in ${took.toFixed(0)} ms; longest event-loop block ${(h.max / 1e6).toFixed(1)} ms (p99 ${(h.percentile(99) / 1e6).toFixed(1)} ms); heap +${mib(held)} at the end, +${mib(kept)} kept after gc`);
}

gc();
const heap = process.memoryUsage().heapUsed;
console.log(`store: ${count} pets, heap ${mib(heap)}; limiters: ${limiters[0].size} keys, ${limiters[1].size} addresses`);
await measure('save', () => snapshots.save('one'));
console.log(`snapshot estimate: ${mib(snapshots.bytes)}`);
await measure('restore', () => snapshots.restore('one'));
