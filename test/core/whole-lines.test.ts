// Workers share the primary's stdout: their log batches go out in whole-line pieces of at most
// PIPE_BUF bytes, each an atomic write, so no worker's line is cut by another's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { wholeLines } from '../../src/core/index.js';

const bytes = (s: string): Uint8Array => new Uint8Array(Buffer.from(s));
const text = (b: Uint8Array): string => Buffer.from(b).toString();

test('a batch is cut at line ends into pieces of at most the bound; nothing lost or reordered', () => {
  const writes: string[] = [];
  const write = wholeLines((chunk) => writes.push(text(chunk)), 64);
  const lines = Array.from({ length: 40 }, (_, i) => `${'x'.repeat(i % 30)}${i}\n`);
  write(bytes(lines.join('')));
  assert.equal(writes.join(''), lines.join(''));
  for (const w of writes) {
    assert.ok(Buffer.byteLength(w) <= 64, w);
    assert.ok(w.endsWith('\n'));
  }
});

test('a single line longer than the bound goes out whole, on its own', () => {
  const writes: string[] = [];
  const write = wholeLines((chunk) => writes.push(text(chunk)), 16);
  write(bytes(`short\n${'y'.repeat(40)}\nend\n`));
  assert.deepEqual(writes, ['short\n', `${'y'.repeat(40)}\n`, 'end\n']);
});

test('a small batch is one write', () => {
  const writes: string[] = [];
  wholeLines((chunk) => writes.push(text(chunk)))(bytes('a\nb\n'));
  assert.deepEqual(writes, ['a\nb\n']);
});

test('the bound is in bytes: a line of non-ASCII characters is not cut inside a character', () => {
  const writes: string[] = [];
  const write = wholeLines((chunk) => writes.push(text(chunk)), 16);
  write(bytes('\u00e9\u00e9\u00e9\u00e9\n\u20ac\u20ac\u20ac\u20ac\n'));
  assert.deepEqual(writes, ['\u00e9\u00e9\u00e9\u00e9\n', '\u20ac\u20ac\u20ac\u20ac\n']);
});
