// What the table of live idempotency keys costs in memory. Run after `node build.mjs --tests`:
//
//   node test/bench/idempotency-memory.mjs [--keys N] [--key-length L]
//
// Two child processes fill a memory store with N pets each, one without keys and one with a
// key per pet (L characters, a UUID's 36 by default; one API key as scope), then report the
// V8 heap (with array buffers, where typed arrays keep their numbers) after a full GC and the
// RSS. The difference is the cost of the keys: the table entries (the key, its pet id, its
// time), the same KeyTable the file store holds. The fingerprint is not kept in memory (the
// pet it made is compared instead), so the figure does not depend on the payload.
import { spawnSync } from 'node:child_process';
import { parseArgs } from 'node:util';

const { values: args } = parseArgs({
  options: {
    keys: { type: 'string', default: '1000000' },
    'key-length': { type: 'string', default: '36' },
    child: { type: 'string' },
  },
});
const n = Number(args.keys);
const keyLength = Number(args['key-length']);

if (args.child !== undefined) {
  const { openMemoryStore, newPetFingerprint } = await import(new URL('../../build/src/store/index.js', import.meta.url).href);
  const store = openMemoryStore();
  const scope = 'c'.repeat(64);
  const keyed = args.child === 'keyed';
  for (let i = 0; i < n; i++) {
    const pet = { name: `pet ${i}`, categoryId: i % 7, status: 'available' };
    if (keyed) {
      // A fresh flat string per key, as node makes a header value from the bytes it read.
      const key = Buffer.from(`${i.toString(16).padStart(12, '0')}-${'x'.repeat(Math.max(0, keyLength - 13))}`.slice(0, keyLength), 'latin1').toString('latin1');
      await store.createIdempotent(pet, { scope, key, fingerprint: newPetFingerprint(pet) });
    } else {
      await store.create(pet);
    }
  }
  globalThis.gc();
  globalThis.gc();
  const m = process.memoryUsage();
  // Array buffers hold the table's ids and times (typed arrays, outside the V8 heap): counted in.
  process.stdout.write(JSON.stringify({ heap: m.heapUsed + m.arrayBuffers, rss: m.rss, pets: store.count, keys: store.idempotencyKeys }));
  process.exit(0);
}

function run(mode) {
  const r = spawnSync(process.execPath, ['--expose-gc', '--max-old-space-size=4096', new URL(import.meta.url).pathname, '--child', mode, '--keys', String(n), '--key-length', String(keyLength)], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${mode}: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

const mib = (bytes) => (bytes / 2 ** 20).toFixed(1);
const plain = run('plain');
const keyed = run('keyed');
if (keyed.keys !== n) throw new Error(`expected ${n} live keys, found ${keyed.keys}`);
const perKeyHeap = (keyed.heap - plain.heap) / n;
const perKeyRss = (keyed.rss - plain.rss) / n;
console.log(`${n.toLocaleString('en')} pets, keys of ${keyLength} characters`);
console.log(`without keys: heap ${mib(plain.heap)} MiB, RSS ${mib(plain.rss)} MiB`);
console.log(`with a key each: heap ${mib(keyed.heap)} MiB, RSS ${mib(keyed.rss)} MiB`);
console.log(`per key: ${perKeyHeap.toFixed(0)} bytes of heap, ${perKeyRss.toFixed(0)} bytes of RSS; ` +
  `at 1,000,000 keys: ${mib(perKeyHeap * 1e6)} MiB of heap, ${mib(perKeyRss * 1e6)} MiB of RSS`);
