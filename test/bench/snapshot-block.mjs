// How long a named snapshot of many pets holds the event loop, and what it costs in heap.
// Run after `node build.mjs --tests`:
//   node --expose-gc test/bench/snapshot-block.mjs [--pets 1000000] [--keys 1000]
//     [--addresses 100000] [--idempotency 100000] [--store memory|file] [--build DIR] [--blocks MS]
// `--build` takes another checkout's build/src (e.g. a worktree of an older commit), so that
// before and after run the same bench in one session. `--blocks` prints every block longer
// than MS, with its start on the process's clock (that of --trace-gc).
//
// Prints, for a save and for a restore: the time taken, the longest event-loop block seen by
// two samplers (a setImmediate chain timing the gaps between its turns, which is exact to the
// chunk, with the main thread's CPU time in the gap; and perf_hooks.monitorEventLoopDelay,
// 1 ms resolution), the peak heap while it ran (sampled every 2 ms) and the heap it keeps
// after gc, both above the heap before (array buffers, where typed arrays keep their numbers,
// counted in). On a busy machine the wall time of a block includes
// time the OS gave other processes: the CPU figure is the block the code itself made.
import { PerformanceObserver, constants as perf, monitorEventLoopDelay } from 'node:perf_hooks';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    pets: { type: 'string', default: '1000000' },
    keys: { type: 'string', default: '1000' },
    addresses: { type: 'string', default: '100000' },
    idempotency: { type: 'string', default: '100000' },
    store: { type: 'string', default: 'memory' },
    build: { type: 'string' },
    label: { type: 'string', default: '' },
    blocks: { type: 'string' },
  },
});
const count = Number(values.pets);
const idemCount = Math.min(count, Number(values.idempotency));
const root = values.build === undefined ? new URL('../../build/src/', import.meta.url).href : pathToFileURL(resolve(values.build) + '/').href;
const { openMemoryStore, openFileStore, newPetFingerprint } = await import(`${root}store/index.js`);
const { Faults, Snapshots } = await import(`${root}api/index.js`);
const { MemoryLimiter } = await import(`${root}limits/index.js`);
const { ManualClock, silentLogger } = await import(`${root}core/index.js`);

const gc = globalThis.gc ?? (() => undefined);
/** The V8 heap plus array buffers (typed arrays' backing stores live outside the heap). */
const heapBytes = () => {
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
};
const mib = (n) => `${(n / 1048576).toFixed(1)} MiB`;
const clock = new ManualClock();
let dir;
let store;
if (values.store === 'file') {
  dir = mkdtempSync(join(tmpdir(), 'snapshot-block-'));
  store = await openFileStore(join(dir, 'pets.json'), { clock, logger: silentLogger });
} else {
  store = openMemoryStore({ clock });
}
const limiters = [new MemoryLimiter({ clock, ban: { after: 20, seconds: 300 } }), new MemoryLimiter({ clock, ban: { after: 20, seconds: 300 }, maxEntries: 100_000 })];
for (let i = 0; i < Number(values.keys); i++) limiters[0].take(`key-${i}`, { perMinute: 60, perDay: 1000 });
for (let i = 0; i < Number(values.addresses); i++) limiters[1].take(`10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`, { perMinute: 30, perDay: 500 });
const statuses = ['available', 'pending', 'sold', undefined];
const plain = count - idemCount;
for (let start = 0; start < plain; start += 100_000) {
  await store.seed(Array.from({ length: Math.min(100_000, plain - start) }, (_, i) => ({ name: `Pet ${start + i}`, categoryId: i, status: statuses[i % 4] })));
}
const scope = 'a'.repeat(64);
for (let start = 0; start < idemCount; start += 10_000) {
  const batch = [];
  for (let i = start; i < Math.min(idemCount, start + 10_000); i++) {
    const pet = { name: `Keyed ${i}`, categoryId: i, status: statuses[i % 4] };
    if (pet.status === undefined) delete pet.status;
    batch.push(store.createIdempotent(pet, { scope, key: `key-${i}`, fingerprint: newPetFingerprint(pet) }));
  }
  await Promise.all(batch);
}
const snapshots = new Snapshots({ store, limiters, faults: new Faults(), clock });

/**
 * The longest gap between turns of a setImmediate chain (wall time, and the main thread's
 * CPU time in that gap: on a shared machine a gap may be the OS running someone else), the
 * longest gap by CPU time, and the peak heap sampled every 2 ms meanwhile.
 */
function sampler() {
  let on = true;
  let last = performance.now();
  let lastCpu = cpuMs();
  let lastProc = processCpuMs();
  let busiestProc = 0;
  let longest = { wall: 0, cpu: 0 };
  let busiest = 0;
  let peak = 0;
  const turn = () => {
    const t = performance.now();
    const c = cpuMs();
    const pc = processCpuMs();
    if (pc - lastProc > busiestProc) busiestProc = pc - lastProc;
    if (t - last > longest.wall) longest = { wall: t - last, cpu: c - lastCpu };
    if (values.blocks !== undefined && t - last > Number(values.blocks)) console.log(`  block at ${last.toFixed(1)} ms (process time): ${(t - last).toFixed(1)} ms wall, main-thread CPU ${(c - lastCpu).toFixed(1)} ms, process CPU ${(pc - lastProc).toFixed(1)} ms`);
    lastProc = pc;
    if (c - lastCpu > busiest) busiest = c - lastCpu;
    last = t;
    lastCpu = c;
    if (on) setImmediate(turn);
  };
  setImmediate(turn);
  const heap = setInterval(() => {
    const used = heapBytes();
    if (used > peak) peak = used;
  }, 2);
  return {
    stop() {
      on = false;
      clearInterval(heap);
      return { longest, busiest, busiestProc, peak };
    },
  };
}

/**
 * CPU time of the main thread alone, in ms, where Linux tells it (schedstat, ns): a gap's
 * main-thread CPU is the block as the code made it, without the time the OS gave other
 * processes and without the collector's helper threads. Else the whole process's CPU time.
 */
const SCHEDSTAT = `/proc/self/task/${process.pid}/schedstat`;
const hasSchedstat = (() => {
  try {
    return Number.isFinite(Number(readFileSync(SCHEDSTAT, 'utf8').split(' ')[0]));
  } catch {
    return false;
  }
})();
/**
 * The whole process's CPU time, in ms (getrusage: exact to the microsecond, where the main
 * thread's schedstat of a running thread is only brought up to date at the kernel's tick, 4 ms
 * here), V8's helper threads included: on the one core the bench is pinned to, their time is
 * time the main thread did not run.
 */
function processCpuMs() {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

function cpuMs() {
  if (hasSchedstat) return Number(readFileSync(SCHEDSTAT, 'utf8').split(' ')[0]) / 1e6;
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

/** The collector's pauses meanwhile (perf_hooks 'gc' entries): count, longest, and each kind's longest and total. */
const GC_KINDS = { [perf.NODE_PERFORMANCE_GC_MINOR]: 'scavenge', [perf.NODE_PERFORMANCE_GC_MAJOR]: 'mark-compact', [perf.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental', [perf.NODE_PERFORMANCE_GC_WEAKCB]: 'weak' };
function gcWatcher() {
  const pauses = [];
  const obs = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) pauses.push({ kind: GC_KINDS[e.detail?.kind ?? e.kind] ?? 'other', ms: e.duration });
  });
  obs.observe({ entryTypes: ['gc'] });
  return {
    async stop() {
      await new Promise((r) => setImmediate(r)); // entries are delivered asynchronously
      obs.disconnect();
      const by = {};
      for (const p of pauses) {
        const k = (by[p.kind] ??= { n: 0, max: 0, total: 0 });
        k.n++;
        k.total += p.ms;
        if (p.ms > k.max) k.max = p.ms;
      }
      return Object.entries(by).map(([kind, k]) => `${k.n} ${kind} (longest ${k.max.toFixed(1)} ms, total ${k.total.toFixed(0)} ms)`).join(', ') || 'none';
    },
  };
}

async function measure(label, fn) {
  gc();
  const before = heapBytes();
  const h = monitorEventLoopDelay({ resolution: 1 });
  h.enable();
  // Half a second for the forced collection's sweeping to finish first: on the one core the
  // bench is pinned to, the first allocations after it wait for the sweeper threads (the
  // save's first step measured 30 ms of wall time after a 10 ms pause, 2 to 6 ms after this).
  await new Promise((r) => setTimeout(r, 500));
  const s = sampler();
  const g = gcWatcher();
  const started = performance.now();
  const result = await fn();
  const took = performance.now() - started;
  // One more turn, so that a block at the very end is seen by the histogram's timer too.
  await new Promise((r) => setTimeout(r, 10));
  const { longest, busiest, busiestProc, peak } = s.stop();
  h.disable();
  const pauses = await g.stop();
  if (result instanceof Error) throw result;
  const end = Math.max(peak, heapBytes()) - before;
  gc();
  const kept = heapBytes() - before;
  console.log(`${values.label}${label}: ${took.toFixed(0)} ms; longest block ${longest.wall.toFixed(1)} ms wall (main-thread CPU in it ${longest.cpu.toFixed(1)} ms; most main-thread CPU in one block ${busiest.toFixed(1)} ms, most process CPU ${busiestProc.toFixed(1)} ms; loop-delay histogram: max ${(h.max / 1e6).toFixed(1)} ms, p99 ${(h.percentile(99) / 1e6).toFixed(1)} ms); heap peak +${mib(end)}, kept +${mib(kept)} after gc; collector pauses: ${pauses}`);
}

gc();
const heap = heapBytes();
console.log(`${values.label}${values.store} store: ${count} pets (${idemCount} with an idempotency key), heap ${mib(heap)}; limiters: ${limiters[0].size} keys, ${limiters[1].size} addresses`);
await measure('save', () => snapshots.save('one'));
console.log(`${values.label}snapshot estimate: ${mib(snapshots.bytes)}`);
// Something to undo: the restore has real work to do on the limiters and the store.
await store.create({ name: 'after', categoryId: 1 });
limiters[1].take('192.168.0.1', { perMinute: 30, perDay: 500 });
await measure('restore', () => snapshots.restore('one'));
if (store.count !== count) throw new Error(`restored ${store.count} pets, not ${count}`);
await store.close();
if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
