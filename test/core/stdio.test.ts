// The log's bound on stdout: past the bound, lines are dropped and counted, and the count is
// told once the queue has drained; below it, every chunk is written.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { boundedWriter } from '../../src/core/index.js';

class FakeQueue extends EventEmitter {
  writableLength = 0;
}

test('below the bound every chunk is written; above it chunks are dropped, their lines counted, told once after a drain', () => {
  const queue = new FakeQueue();
  const written: string[] = [];
  const told: number[] = [];
  const write = boundedWriter(queue, (c) => { written.push(c); queue.writableLength += c.length; }, 10, (n) => told.push(n));
  write('a\nb\n');
  write('c\nd\ne\n'); // 4 queued, at or below 10: written
  write('f\ng\nh\n'); // 10 queued: still written
  write('i\nj\n'); // 16 queued: dropped
  write('k\n');
  write('partial'); // a piece without newline counts as one line
  assert.deepEqual(written, ['a\nb\n', 'c\nd\ne\n', 'f\ng\nh\n']);
  assert.deepEqual(told, []);
  queue.writableLength = 0;
  queue.emit('drain');
  assert.deepEqual(told, [4]);
  write('l\n');
  assert.deepEqual(written.at(-1), 'l\n');
  queue.emit('drain');
  assert.deepEqual(told, [4], 'told once per episode of drops');
});
