// Damaged data files are refused, never repaired by guessing: every journal record is checked
// (ids strictly ascending, records below the snapshot's ids only as exact copies of its
// pets), the snapshot's nextId must follow its last pet, and a complete (newline-ended) line
// that cannot be read is damage, not a torn write. Each refusal names the file and the line
// and leaves every file as it was.
import { test } from 'node:test';
import { spawnSync } from 'node:child_process';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openFileStore, StoreOpenError } from '../../../src/store/index.js';
import { allPets, BUNDLE, tempDir, writeConfig } from '../../support/bundle.js';
import { silentLogger } from '../../../src/core/index.js';

const pet = (id: number, name = `pet ${id}`): string => `${JSON.stringify({ id, name, categoryId: 1 })}\n`;
const pets = (ids: number[]): string => ids.map((id) => pet(id)).join('');
/** A snapshot in the layout the store writes: one pet per line. */
const snapshot = (nextId: number, ids: number[]): string =>
  `{"format":"petstore-snapshot","version":1,"nextId":${nextId},"pets":[${ids.map((id) => `\n${pet(id).trimEnd()}`).join(',')}\n]}\n`;

interface Files { snapshot?: string; old?: string; journal?: string }

function write(dir: string, files: Files): string {
  const file = join(dir, 'pets.json');
  if (files.snapshot !== undefined) writeFileSync(file, files.snapshot);
  if (files.old !== undefined) writeFileSync(`${file}.journal.old`, files.old);
  if (files.journal !== undefined) writeFileSync(`${file}.journal`, files.journal);
  return file;
}

function contents(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of readdirSync(dir).sort()) out[name] = readFileSync(join(dir, name), 'latin1');
  return out;
}

const refused: Array<{ name: string; files: Files; file: 'pets.json' | 'pets.json.journal' | 'pets.json.journal.old'; says: RegExp }> = [
  {
    // One changed digit used to drop pets 5-8 and the real 9 without a word.
    name: 'a journal id edited upwards (4 -> 9)',
    files: { journal: pets([1, 2, 3, 9, 5, 6, 7, 8, 9, 10]) },
    file: 'pets.json.journal',
    says: /line 5 \(pet id 5 is not above the record before it \(9\)\)/,
  },
  {
    name: 'journal lines out of id order',
    files: { journal: pets([1, 2, 4, 3]) },
    file: 'pets.json.journal',
    says: /line 4 \(pet id 3 is not above/,
  },
  {
    name: 'a repeated journal record',
    files: { journal: pets([1, 2, 2, 3]) },
    file: 'pets.json.journal',
    says: /line 3\b/,
  },
  {
    name: 'ids out of order from .old into the journal',
    files: { old: pets([1, 2, 3]), journal: pets([2, 4]) },
    file: 'pets.json.journal',
    says: /line 1 \(pet id 2 is not above the record before it \(3\)\)/,
  },
  {
    // A raised nextId used to hide every journal record below it.
    name: 'a snapshot whose nextId was raised',
    files: { snapshot: snapshot(100, [1, 2, 3]), journal: pets([4, 5]) },
    file: 'pets.json',
    says: /line 1 .*"nextId" 100 but its last pet has id 3 \(expected 4\)/,
  },
  {
    name: 'an empty snapshot with a nextId',
    files: { snapshot: snapshot(7, []), journal: pets([1]) },
    file: 'pets.json',
    says: /"nextId" 7 but no pets/,
  },
  {
    name: 'a one-document snapshot whose nextId was raised',
    files: { snapshot: JSON.stringify({ format: 'petstore-snapshot', version: 1, nextId: 50, pets: [{ id: 1, name: 'a', categoryId: 1 }] }) },
    file: 'pets.json',
    says: /"nextId" 50 but its last pet has id 1/,
  },
  {
    name: 'a journal record below the snapshot\'s ids that is not its pet',
    files: { snapshot: snapshot(4, [1, 2, 3]), journal: pet(3, 'changed') + pet(4) },
    file: 'pets.json.journal',
    says: /line 1 \(pet id 3 is below the next id \(4\) but is not the pet stored with that id\)/,
  },
  {
    name: 'a journal record below the snapshot\'s ids that it does not hold',
    files: { snapshot: snapshot(6, [1, 5]), journal: pet(3) + pet(6) },
    file: 'pets.json.journal',
    says: /line 1 \(pet id 3 is below/,
  },
  {
    // A line that ends in a newline was written whole: not a torn write to drop.
    name: 'a corrupt complete last journal line',
    files: { journal: `${pets([1, 2, 3])}{"id":4,"name":"x","categoryId":1\n` },
    file: 'pets.json.journal',
    says: /line 4 \(not JSON/,
  },
  {
    name: 'a pet line of the snapshot that is not JSON',
    files: { snapshot: snapshot(4, [1, 2, 3]).replace('"pet 2"', '"pet 2') },
    file: 'pets.json',
    says: /line 3 \(not JSON/,
  },
  {
    name: 'snapshot pets out of order',
    files: { snapshot: snapshot(4, [1, 3, 2]) },
    file: 'pets.json',
    says: /line 4 \(pet id 2 is not above the one before it \(3\)\)/,
  },
  {
    name: 'a snapshot cut short after a pet',
    files: { snapshot: snapshot(4, [1, 2, 3]).replace(/\n\]\}\n$/, ',\n') },
    file: 'pets.json',
    says: /ends before the end of the document/,
  },
  {
    name: 'a snapshot with a line after its end',
    files: { snapshot: `${snapshot(4, [1, 2, 3])}${pet(4)}` },
    file: 'pets.json',
    says: /line 6 \(there is text after the end/,
  },
];

for (const c of refused) {
  test(`file store: ${c.name} refuses the start, names the line, touches nothing`, async (t) => {
    const dir = tempDir();
    const file = write(dir, c.files);
    const before = contents(dir);
    await assert.rejects(openFileStore(file, { logger: silentLogger }), (err: unknown) => {
      assert.ok(err instanceof StoreOpenError, String(err));
      assert.ok(err.message.includes(join(dir, c.file)), err.message);
      assert.match(err.message, c.says);
      assert.match(err.message, /refusing to start/);
      return true;
    });
    assert.deepEqual(contents(dir), before, 'every file is left exactly as it was, no lock behind');
  });
}

// What a crash between writing a snapshot and dropping the journals leaves is still read.
const accepted: Array<{ name: string; files: Files; want: number[] }> = [
  { name: 'journal records that repeat the snapshot\'s last pets', files: { snapshot: snapshot(4, [1, 2, 3]), journal: pets([2, 3, 4]) }, want: [1, 2, 3, 4] },
  { name: '.old covered by the snapshot', files: { snapshot: snapshot(4, [1, 2, 3]), old: pets([1, 2, 3]), journal: pets([4]) }, want: [1, 2, 3, 4] },
  { name: 'a snapshot with ids beyond the journal\'s start after a reset', files: { snapshot: snapshot(3, [1, 2]), journal: pets([1, 2]) + '{"op":"reset"}\n' + pets([1]) }, want: [1] },
];

for (const c of accepted) {
  test(`file store: ${c.name} opens`, async (t) => {
    const dir = tempDir();
    const file = write(dir, c.files);
    const store = await openFileStore(file, { logger: silentLogger });
    assert.deepEqual(allPets(store).map((p) => p.pet.id), c.want);
    await store.close();
  });
}

test('the service refuses a damaged journal line by name, and no id is reused', () => {
  const dir = tempDir();
  const data = join(dir, 'pets.json');
  // The last line edited to invalid JSON, its newline kept.
  writeFileSync(`${data}.journal`, `${pets([1, 2])}{"id":3,"name":"pet 3","categoryId":1}x\n`);
  const before = readFileSync(`${data}.journal`);
  // Killed after a while if it starts after all (as it did, dropping the line and reusing id 3).
  const r = spawnSync(process.execPath, [BUNDLE, '--config', writeConfig(dir), '--data', data, '--port', '0'], { encoding: 'utf8', timeout: 10_000 });
  assert.equal(r.status, 1, r.stdout);
  assert.match(r.stderr, new RegExp(`${data.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\.journal is damaged at line 3`));
  assert.doesNotMatch(r.stderr, /\n\s+at /);
  assert.deepEqual(readFileSync(`${data}.journal`), before);
  assert.equal(existsSync(`${data}.lock`), false);
  rmSync(dir, { recursive: true, force: true });
});
