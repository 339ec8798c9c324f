// Generated request ids: a random 8-hex-digit prefix per instance, a dash, and a counter from 1
// in base 36 (docs/api.md). The counter's text is made from a table of its last two digits,
// so every id is checked against Number#toString(36) across the table's edges.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { requestIds } from '../../src/http/request.js';

test('ids count from 1 in base 36 after a random prefix, as toString(36) writes the counter', () => {
  const next = requestIds();
  const first = next();
  const match = /^([0-9a-f]{8})-1$/.exec(first);
  assert.ok(match, `first id: ${first}`);
  const prefix = `${match[1]}-`;
  // 36 * 36 = 1296: the edges where the high digits start and grow (36^3, 36^4 too).
  const checkpoints = new Set([35, 36, 1295, 1296, 1297, 2591, 2592, 46655, 46656, 46657, 1679615, 1679616]);
  for (let n = 2; n <= 1_679_700; n++) {
    const id = next();
    if (n < 5000 || checkpoints.has(n) || n % 9973 === 0) assert.equal(id, `${prefix}${n.toString(36)}`, `id number ${n}`);
  }
});

test('ids past 60 million and 2 billion (three and four high digits, then five) are the counter in base 36', () => {
  for (const first of [36 ** 4 - 3, 36 ** 5 - 3, 36 ** 6 - 3]) {
    const next = requestIds(first);
    const id = next();
    const prefix = /^[0-9a-f]{8}-/.exec(id)?.[0] ?? assert.fail(`id: ${id}`);
    assert.equal(id, `${prefix}${first.toString(36)}`);
    // Across the edge where the counter grows by a digit, and through a whole run of low digits.
    for (let n = first + 1; n < first + 1400; n++) assert.equal(next(), `${prefix}${n.toString(36)}`, `id number ${n}`);
  }
});

test('each instance has its own prefix and its own counter', () => {
  const a = requestIds();
  const b = requestIds();
  const ida = a();
  const idb = b();
  assert.match(ida, /-1$/);
  assert.match(idb, /-1$/);
  // Two random 32-bit prefixes are the same once in four billion.
  assert.notEqual(ida, idb);
});
