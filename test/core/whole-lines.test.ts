// Workers share the primary's stdout: their log batches go out in whole-line pieces of at most
// PIPE_BUF bytes, each an atomic write, so no worker's line is cut by another's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { wholeLines } from '../../src/core/index.js';

test('a batch is cut at line ends into pieces of at most the bound; nothing lost or reordered', () => {
  const writes: string[] = [];
  const write = wholeLines((chunk) => writes.push(chunk), 64);
  const lines = Array.from({ length: 40 }, (_, i) => `${'x'.repeat(i % 30)}${i}\n`);
  write(lines.join(''));
  assert.equal(writes.join(''), lines.join(''));
  for (const w of writes) {
    assert.ok(w.length <= 64, w);
    assert.ok(w.endsWith('\n'));
  }
});

test('a single line longer than the bound goes out whole, on its own', () => {
  const writes: string[] = [];
  const write = wholeLines((chunk) => writes.push(chunk), 16);
  write(`short\n${'y'.repeat(40)}\nend\n`);
  assert.deepEqual(writes, ['short\n', `${'y'.repeat(40)}\n`, 'end\n']);
});

test('a small batch is one write', () => {
  const writes: string[] = [];
  wholeLines((chunk) => writes.push(chunk))('a\nb\n');
  assert.deepEqual(writes, ['a\nb\n']);
});
