// Run as a child process by read-cache-heap.test.ts, under a heap cap: fills a read cache as the
// PostgreSQL store would (every read a fresh row, its name decoded from bytes as the driver
// decodes it), with pets by id and many distinct full pages that share most of their pets, then
// prints one JSON line: the live heap it added (after forced collections), the bytes the cache
// counted, and its bound. Arguments: the kind of name (ascii, latin1, cjk, emoji), pets, pages.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { StoreGeneration } from '../../../src/core/index.js';
import { ReadCachedStore, type ListQuery, type PetStore, type StoredPet } from '../../../src/store/index.js';
import { makePet, petJson } from '../../../src/store/codec.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const live = (): number => {
  gc();
  gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.external;
};

const [kind = 'cjk', petsArg = '60000', pagesArg = '30000'] = process.argv.slice(2);
const PETS = Number(petsArg);
const PAGES = Number(pagesArg);
const LETTER: Record<string, string> = { ascii: 'n', latin1: 'é', cjk: '名', emoji: '🐕' };
const letter = LETTER[kind] ?? 'n';
// 240 characters (an emoji is two), the id at the end so that every name differs.
const stem = letter.repeat(240 / letter.length - 8);

/** A row as the driver hands it over: fresh strings decoded from the wire's bytes. */
function row(id: number): StoredPet {
  const name = Buffer.from(`${stem}${String(id).padStart(8, '0')}`).toString('utf8');
  const pet = makePet(id, name, 2 ** 40 + id, id % 2 === 0 ? 'sold' : 'available');
  return { pet, json: petJson(pet) };
}

const db = {
  get: (id: number) => Promise.resolve(id <= PETS ? row(id) : undefined),
  list: (q: ListQuery) => {
    const rows: StoredPet[] = [];
    for (let id = (q.afterId ?? 0) + 1; id <= PETS && rows.length < q.limit; id++) rows.push(row(id));
    return Promise.resolve(rows);
  },
  watchCreates: () => undefined,
  create: () => Promise.reject(new Error('no creates here')),
  seed: () => Promise.reject(new Error('no seeds here')),
  reset: () => Promise.resolve(),
  close: () => Promise.resolve(),
} satisfies PetStore & Record<string, unknown>;

const gen = new StoreGeneration(async () => 'g:1');
gen.observe('g:0');
const cache = new ReadCachedStore(db, gen);
const before = live();
for (let id = 1; id <= PETS; id++) await cache.get(id);
// Distinct pages of 101 (the API's limit 100 plus the one that proves it full), each cursor one
// further than the last: neighbours share 100 of their pets.
for (let after = 0; after < PAGES; after++) await cache.list({ limit: 101, afterId: after % (PETS - 101) });
const added = live() - before;
process.stdout.write(`${JSON.stringify({ added, counted: cache.bytes, size: cache.size })}\n`);
