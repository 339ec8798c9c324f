import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PART_ENTRIES, PartedMap } from '../../src/core/parted-map.js';

const P = PART_ENTRIES;

test('ordered: entries in parts of at most PART_ENTRIES, walked in the order added', () => {
  const m = new PartedMap<string, number>(true);
  const n = 3 * P + 5;
  for (let i = 0; i < n; i++) m.add(`k${i}`, i);
  assert.equal(m.size, n);
  assert.equal(m.parts, 4, 'no part above PART_ENTRIES');
  for (const i of [0, P - 1, P, 2 * P, n - 1]) assert.equal(m.get(`k${i}`), i);
  assert.equal(m.get('nope'), undefined);
  let expected = 0;
  for (const [k, v] of m) {
    assert.equal(v, expected);
    assert.equal(k, `k${expected}`);
    expected++;
  }
  assert.equal(expected, n);
  // Deleted in the middle and re-added: it goes to the end, as in a Map.
  assert.ok(m.delete(`k${P + 3}`));
  assert.equal(m.delete(`k${P + 3}`), false);
  m.add(`k${P + 3}`, -1);
  const keys = [...m.entries()].map(([k]) => k);
  assert.equal(keys.at(-1), `k${P + 3}`);
  assert.equal(keys.length, n);
});

test('ordered: a part emptied is dropped, and a walk standing on it goes on', () => {
  const m = new PartedMap<number, number>(true);
  for (let i = 0; i < 2 * P + 10; i++) m.add(i, i);
  const walk = m.entries();
  assert.deepEqual(walk.next().value, [0, 0]);
  // Empty the first part (the walk stands in it) and part of the second.
  for (let i = 0; i < P + 5; i++) m.delete(i);
  assert.equal(m.parts, 2);
  m.add(-7, -7);
  const rest = [...walk].map(([k]) => k);
  assert.deepEqual(rest.slice(0, 3), [P + 5, P + 6, P + 7]);
  assert.equal(rest.at(-1), -7, 'entries added after the walk began are seen at its end');
  assert.equal(rest.length, 2 * P + 10 - (P + 5) + 1);
  // The last part is kept even when empty; all empty, one part.
  for (const [k] of [...m]) m.delete(k);
  assert.equal(m.size, 0);
  assert.equal(m.parts, 1);
  m.add(1, 1);
  assert.equal(m.get(1), 1);
});

test('unordered: a new entry goes to the first part with room, so deletions do not add parts', () => {
  const m = new PartedMap<number, number>(false);
  for (let i = 0; i < 2 * P; i++) m.add(i, i);
  assert.equal(m.parts, 2);
  for (let round = 0; round < 5; round++) {
    for (let i = 0; i < 1000; i++) m.delete(round * 1000 + i);
    for (let i = 0; i < 1000; i++) m.add(10 * P + round * 1000 + i, i);
    assert.equal(m.parts, 2, `round ${round}`);
  }
  assert.equal(m.size, 2 * P);
  m.add(-1, -1);
  assert.equal(m.parts, 3);
  assert.equal(m.get(-1), -1);
  assert.equal(m.get(10 * P + 4999), 999);
});
