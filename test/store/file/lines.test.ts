// The data files are read a chunk at a time, one line per record, so that a snapshot's size
// is bounded by the disk and not by V8's largest string (about 2^29 characters): these tests
// read files many times larger than a deliberately small chunk, and check that no string
// decoded along the way is much longer than one chunk.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { forEachLine, LineTooLongError } from '../../../src/store/file/lines.js';
import { readSnapshot } from '../../../src/store/file/snapshot.js';
import type { StorePaths } from '../../../src/store/file/disk.js';
import { openFileStore } from '../../../src/store/index.js';
import { allPets, tempDir } from '../../support/bundle.js';
import { silentLogger } from '../../../src/core/index.js';

function paths(file: string): StorePaths {
  return { given: file, snapshot: file, dir: join(file, '..'), journal: `${file}.journal`, oldJournal: `${file}.journal.old`, lock: `${file}.lock`, tmp: `${file}.tmp` };
}

test('forEachLine: lines across chunk boundaries, multi-byte characters cut by a chunk, and the unfinished tail', (t) => {
  const file = join(tempDir(), 'lines');
  const lines = ['', 'a', 'café ☕ 𝄞', 'x'.repeat(40), 'ünïcödé', '{"id":1}'];
  writeFileSync(file, `${lines.join('\n')}\ntail ☕`);
  for (const chunkBytes of [1, 2, 3, 5, 7, 64, 1 << 20]) {
    const seen: Array<[string, number]> = [];
    const read = forEachLine(file, (text, line) => void seen.push([text, line]), { chunkBytes });
    assert.deepEqual(seen, lines.map((l, i) => [l, i + 1]), `chunk ${chunkBytes}`);
    assert.equal(read.tail, 'tail ☕');
    assert.equal(read.tailStart, Buffer.byteLength(`${lines.join('\n')}\n`));
    assert.equal(read.bytes, statSync(file).size);
    assert.equal(read.stopped, false);
  }
});

test('forEachLine: onLine can stop the reading; a line over the bound is named, not decoded', (t) => {
  const file = join(tempDir(), 'lines');
  writeFileSync(file, `one\ntwo\n${'z'.repeat(5000)}\nfour\n`);
  const seen: string[] = [];
  const read = forEachLine(file, (text) => {
    seen.push(text);
    return text !== 'two';
  }, { chunkBytes: 4 });
  assert.deepEqual(seen, ['one', 'two']);
  assert.equal(read.stopped, true);
  assert.throws(() => forEachLine(file, () => undefined, { chunkBytes: 16, maxLineBytes: 1000 }), (err: unknown) => {
    assert.ok(err instanceof LineTooLongError);
    assert.equal(err.line, 3);
    return true;
  });
  // Under the bound, a line longer than a chunk is read whole.
  const long: string[] = [];
  forEachLine(file, (text) => void long.push(text), { chunkBytes: 16, maxLineBytes: 8000 });
  assert.equal(long[2]?.length, 5000);
});

test('a snapshot many times larger than a chunk is read without a string of the whole file', async (t) => {
  const file = join(tempDir(), 'pets.json');
  // The store writes the snapshot (a compaction at close, with a tiny threshold).
  let store = await openFileStore(file, { logger: silentLogger, compactMinBytes: 1 });
  const names = ['plain', 'café ☕', '\u0001'.repeat(256), 'x'.repeat(200)];
  await store.seed(Array.from({ length: 3000 }, (_, i) => ({ name: `${names[i % names.length] ?? ''} ${i}`, categoryId: i % 5 })));
  await store.close();
  const bytes = statSync(file).size;
  assert.ok(bytes > 200_000, `snapshot of ${bytes} bytes`);
  assert.match(readFileSync(file, 'utf8').split('\n', 1)[0] ?? '', /^\{"format":"petstore-snapshot","version":1,"nextId":3001,"pets":\[$/);

  const chunkBytes = 4096;
  const loaded = readSnapshot(paths(file), { chunkBytes });
  assert.equal(loaded.pets.length, 3000);
  assert.equal(loaded.nextId, 3001);
  assert.equal(loaded.bytes, bytes);
  assert.equal(loaded.pets[2]?.name, `${'\u0001'.repeat(256)} 2`);
  assert.ok(loaded.largestString <= chunkBytes, `largest string decoded: ${loaded.largestString} characters`);

  store = await openFileStore(file, { logger: silentLogger });
  assert.equal(allPets(store).length, 3000);
  assert.equal((await store.create({ name: 'next', categoryId: 1 })).pet.id, 3001);
  await store.close();
});

test('a snapshot written as one JSON document (older layout, or by hand) still opens', async (t) => {
  const d = tempDir();
  const doc = { format: 'petstore-snapshot', version: 1, nextId: 3, pets: [{ id: 1, name: 'a', categoryId: 1 }, { id: 2, name: 'b', categoryId: 2, status: 'sold' }] };
  for (const [name, text] of [['one-line.json', JSON.stringify(doc)], ['pretty.json', JSON.stringify(doc, null, 2)]] as const) {
    const file = join(d, name);
    writeFileSync(file, text);
    const store = await openFileStore(file, { logger: silentLogger });
    assert.deepEqual(allPets(store).map((p) => p.json), ['{"id":1,"name":"a","categoryId":1}', '{"id":2,"name":"b","categoryId":2,"status":"sold"}']);
    await store.close();
  }
});
