// Benchmarks of the pet store. Run after `node build.mjs --tests`:
//
//   node test/bench/store-bench.mjs [--dir DIR] [--pets N]
//
// (a) durable creates, 64 in flight (group commit) vs one write + fdatasync per create;
// (b) list with a rare (1%) status and a deep afterId, 1,000 pets vs 1,000,000 pets;
// (c) opening a 1,000,000-pet store vs readFileSync + JSON.parse of the same snapshot;
// (d) RSS of a process with 1,000,000 pets loaded.
// With --before DIR (another checkout's build/src) it measures only (e): the index's get and
// list, this build's against DIR's, the same pet objects in both, interleaved rounds (medians).
// DIR (default: the OS temporary directory) should be on the disk the service will use.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const STORE = new URL('../../build/src/store/index.js', import.meta.url);
const { openFileStore, openMemoryStore } = await import(STORE.href);

const quiet = { log: () => undefined };
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const mib = (bytes) => bytes / 2 ** 20;

// ---------------------------------------------------------------- child modes (c), (d)

const { values: args } = parseArgs({
  options: {
    dir: { type: 'string', default: tmpdir() },
    pets: { type: 'string', default: '1000000' },
    child: { type: 'string' },
    file: { type: 'string' },
    'no-compact': { type: 'boolean', default: false },
    before: { type: 'string' },
    rounds: { type: 'string', default: '9' },
  },
});

if (args.child === 'baseline') {
  const t0 = performance.now();
  const doc = JSON.parse(readFileSync(args.file, 'utf8'));
  const ms = performance.now() - t0;
  console.log(JSON.stringify({ ms, pets: doc.pets.length }));
  process.exit(0);
}
if (args.child === 'open') {
  const t0 = performance.now();
  // --no-compact: leave the files as found, so that every run measures the same state.
  const compactMinBytes = args['no-compact'] ? Number.MAX_SAFE_INTEGER : undefined;
  const store = await openFileStore(args.file, { logger: quiet, compactMinBytes });
  const ms = performance.now() - t0;
  const rss = process.memoryUsage().rss;
  globalThis.gc?.();
  const rssAfterGc = process.memoryUsage().rss;
  const count = store.count;
  await store.close();
  console.log(JSON.stringify({ ms, rss, rssAfterGc, pets: count }));
  process.exit(0);
}

// ---------------------------------------------------------------- main

const PETS = Number(args.pets);
const work = mkdtempSync(join(args.dir, 'petstore-bench-store-'));
process.on('exit', () => rmSync(work, { recursive: true, force: true }));
const line = (label, value) => console.log(`${label.padEnd(58)} ${value}`);

console.log(`store benchmark — node ${process.version}, data in ${work}`);

if (args.before !== undefined) {
  await benchIndex(args.before);
  process.exit(0);
}
await benchCreates();
await benchList();
await benchOpen();

// (a) ------------------------------------------------------------------------------------

async function benchCreates() {
  const seconds = 2;
  console.log('\n(a) durable creates');

  // Baseline: what a store without group commit does, one write + fdatasync per create.
  const handle = await open(join(work, 'baseline.journal'), 'a');
  let baselineCount = 0;
  const baselineEnd = performance.now() + seconds * 1000;
  while (performance.now() < baselineEnd) {
    await handle.write(`{"id":${baselineCount + 1},"name":"baseline pet","categoryId":1,"status":"available"}\n`);
    await handle.datasync();
    baselineCount++;
  }
  await handle.close();
  const baselineRate = baselineCount / seconds;

  const batches = [];
  const store = await openFileStore(join(work, 'creates.json'), { logger: quiet, onFlush: (n) => batches.push(n) });
  let created = 0;
  const end = performance.now() + seconds * 1000;
  const worker = async () => {
    while (performance.now() < end) {
      await store.create({ name: 'bench pet', categoryId: 1, status: 'available' });
      created++;
    }
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: 64 }, worker));
  const elapsed = (performance.now() - t0) / 1000;
  await store.close();
  const rate = created / elapsed;

  line('baseline: one write + fdatasync per create', `${baselineRate.toFixed(0)} creates/s`);
  line('store: 64 concurrent creates (group commit)', `${rate.toFixed(0)} creates/s`);
  line('  flushes, mean batch size', `${batches.length}, ${(created / batches.length).toFixed(1)}`);
  line('ratio (target >= 5x)', `${(rate / baselineRate).toFixed(1)}x`);
}

// (b) ------------------------------------------------------------------------------------

async function benchList() {
  console.log('\n(b) list, status held by 1% of pets, deep afterId, limit 5');
  const small = await listLatency(1000);
  const large = await listLatency(PETS);
  line(`median list latency, 1,000 pets`, `${(small * 1000).toFixed(2)} us`);
  line(`median list latency, ${PETS.toLocaleString('en')} pets`, `${(large * 1000).toFixed(2)} us`);
  line('ratio (target <= 1.5x)', `${(large / small).toFixed(2)}x`);
}

/** Median ms per list call on a store of n pets where 1 in 100 is 'pending'. */
async function listLatency(n) {
  const store = openMemoryStore();
  const pets = new Array(n);
  for (let i = 0; i < n; i++) {
    const status = i % 100 === 50 ? 'pending' : i % 2 === 0 ? 'available' : 'sold';
    pets[i] = { name: `pet ${i}`, categoryId: i % 10, status };
  }
  await store.seed(pets);
  // Halfway: at 1,000 pets exactly 5 rare pets lie beyond it, so both sizes fill the page.
  const afterId = Math.floor(n * 0.5);
  const q = { status: 'pending', limit: 5, afterId };
  if (store.list(q).length !== 5) throw new Error('benchmark set-up: expected a full page');
  const samples = [];
  const callsPerSample = 200;
  for (let s = 0; s < 300; s++) {
    const t0 = performance.now();
    for (let i = 0; i < callsPerSample; i++) {
      q.afterId = afterId + (i % 7); // vary the search a little
      store.list(q);
    }
    samples.push((performance.now() - t0) / callsPerSample);
  }
  await store.close();
  return median(samples.slice(50)); // drop warm-up
}

// (c), (d) ----------------------------------------------------------------------------------

async function benchOpen() {
  console.log(`\n(c) open a ${PETS.toLocaleString('en')}-pet store, (d) its memory`);
  const file = join(work, 'million.json');
  const t0 = performance.now();
  const store = await openFileStore(file, { logger: quiet });
  // One seed: one journal batch, which the compaction that follows moves into the snapshot.
  await store.seed(makePets(0, PETS));
  await store.close(); // waits for that compaction
  line('seeded (seed + compaction)', `${((performance.now() - t0) / 1000).toFixed(1)} s`);
  line('snapshot size', `${mib(statSync(file).size).toFixed(1)} MiB, journal ${statSync(`${file}.journal`).size} bytes`);

  const self = fileURLToPath(import.meta.url);
  const runChild = (mode, extra = [], data = file) => {
    const r = spawnSync(process.execPath, [...extra, self, '--child', mode, '--file', data, '--no-compact'], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`child ${mode} failed: ${r.stderr}`);
    return JSON.parse(r.stdout);
  };
  const baseline = [];
  const opened = [];
  for (let i = 0; i < 5; i++) {
    baseline.push(runChild('baseline'));
    opened.push(runChild('open', ['--expose-gc']));
  }
  const base = median(baseline.map((r) => r.ms));
  const ours = median(opened.map((r) => r.ms));
  if (opened.some((r) => r.pets !== PETS)) throw new Error('the store did not load every pet');
  line('readFileSync + JSON.parse of the snapshot (median of 5)', `${base.toFixed(0)} ms`);
  line('openFileStore (median of 5)', `${ours.toFixed(0)} ms`);
  line('ratio (target <= 1.5x)', `${(ours / base).toFixed(2)}x`);
  line('(d) RSS once open, before any GC (max of 5; target < 400 MiB)', `${mib(Math.max(...opened.map((r) => r.rss))).toFixed(0)} MiB`);
  line('    RSS after a full GC (max of 5)', `${mib(Math.max(...opened.map((r) => r.rssAfterGc))).toFixed(0)} MiB`);

  // The other shape a store can have at start: compaction is due once the journal outgrows
  // the snapshot, so up to about half the pets may be replayed from journal lines.
  const half = join(work, 'half.json');
  const s1 = await openFileStore(half, { logger: quiet });
  await s1.seed(makePets(0, PETS / 2));
  await s1.close();
  const s2 = await openFileStore(half, { logger: quiet, compactMinBytes: Number.MAX_SAFE_INTEGER });
  await s2.seed(makePets(PETS / 2, PETS));
  await s2.close();
  const halfOpen = [];
  for (let i = 0; i < 3; i++) halfOpen.push(runChild('open', [], half));
  line('openFileStore, half the pets in the journal (median of 3)', `${median(halfOpen.map((r) => r.ms)).toFixed(0)} ms`);
  line('    RSS once open (max of 3)', `${mib(Math.max(...halfOpen.map((r) => r.rss))).toFixed(0)} MiB`);
}

function makePets(from, to) {
  const statuses = ['available', 'pending', 'sold', undefined];
  const pets = [];
  for (let i = from; i < to; i++) {
    const status = statuses[i % 4];
    pets.push(status ? { name: `pet number ${i}`, categoryId: i % 1000, status } : { name: `pet number ${i}`, categoryId: i % 1000 });
  }
  return pets;
}

// (e) ------------------------------------------------------------------------------------

/** get (random ids) and list (a page of 20 after a random cursor, all and one status), two builds. */
async function benchIndex(beforeDir) {
  console.log(`\n(e) index get and list, ${PETS} pets: this build / ${beforeDir}`);
  const statuses = ['available', 'pending', 'sold', undefined];
  const pets = [];
  for (let id = 1; id <= PETS; id++) {
    const status = id % 97 === 0 ? 'sold' : statuses[id % 4];
    pets.push(status === undefined ? { id, name: `pet ${id}`, categoryId: id } : { id, name: `pet ${id}`, categoryId: id, status });
  }
  const builds = [];
  for (const [name, dir] of [['after', new URL('../../build/src/', import.meta.url).href], ['before', pathToFileURL(resolve(beforeDir) + '/').href]]) {
    const { PetIndex } = await import(`${dir}store/pet-index.js`);
    const index = new PetIndex();
    for (const p of pets) index.add(p);
    builds.push({ name, index, times: [[], [], []] });
  }
  let sink = 0;
  const run = (index) => {
    let x = 12345;
    const next = () => (x = (x * 1103515245 + 12345) & 0x7fffffff);
    const t0 = performance.now();
    for (let i = 0; i < 1_000_000; i++) sink += index.get(1 + (next() % PETS)).id;
    const t1 = performance.now();
    for (let i = 0; i < 50_000; i++) sink += index.list(undefined, next() % PETS, 20).length;
    const t2 = performance.now();
    for (let i = 0; i < 50_000; i++) sink += index.list('sold', next() % PETS, 20).length;
    return [t1 - t0, t2 - t1, performance.now() - t2];
  };
  const rounds = Number(args.rounds);
  for (let r = 0; r < rounds; r++) {
    for (const b of r % 2 === 0 ? builds : [...builds].reverse()) {
      const t = run(b.index);
      if (r > 0) t.forEach((ms, k) => b.times[k].push(ms)); // the first round warms up
    }
  }
  const labels = ['get, 1,000,000 random ids', 'list, 50,000 pages of 20', 'list sold, 50,000 pages of 20'];
  labels.forEach((label, k) => {
    const [a, b] = builds.map((x) => median(x.times[k]));
    line(label, `${a.toFixed(1)} ms vs ${b.toFixed(1)} ms: ${(a / b).toFixed(2)}x`);
  });
  if (sink === 0) console.log('');
}
