// The way out to stdout (pieceWriter): each piece written to the descriptor at once when it
// takes it; else queued, and handed to the stream one piece at a time, so that node never joins
// pieces into one write the kernel may cut; past the bound, pieces dropped and counted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pieceWriter, type PieceWriter, type WriteSync } from '../../src/core/index.js';

function errno(code: string): NodeJS.ErrnoException {
  return Object.assign(new Error(code), { code });
}

/** A fake descriptor answering with `answers` in turn (a count taken, or an error code), and a fake stream. */
function fake(answers: Array<number | string>, maxQueuedBytes = 1 << 20): {
  w: PieceWriter; fd: string[]; stream: Array<{ text: string; done: () => void }>; failures: string[]; told: number[]; isFailed: () => boolean;
} {
  const fd: string[] = [];
  const stream: Array<{ text: string; done: () => void }> = [];
  const failures: string[] = [];
  const told: number[] = [];
  let failed = false;
  const writeSync: WriteSync = (n, bytes, offset, length) => {
    assert.equal(n, 7);
    const answer = answers.shift() ?? length;
    if (typeof answer === 'string') throw errno(answer);
    const taken = Math.min(answer, length);
    fd.push(Buffer.from(bytes.subarray(offset, offset + taken)).toString());
    return taken;
  };
  const fakeStream = {
    get writableLength() {
      return stream.reduce((sum, s) => sum + s.text.length, 0);
    },
    write(chunk: Uint8Array, cb: () => void) {
      const entry = { text: Buffer.from(chunk).toString(), done: () => undefined as void };
      entry.done = () => {
        stream.splice(stream.indexOf(entry), 1);
        cb();
      };
      stream.push(entry);
    },
  };
  const w = pieceWriter(7, fakeStream, {
    maxQueuedBytes,
    onDropped: (n) => told.push(n),
    failed: () => failed,
    onFail: (err) => {
      failed = true;
      failures.push(err.code ?? '');
    },
    write: writeSync,
  });
  return { w, fd, stream, failures, told, isFailed: () => failed };
}

test('written to the descriptor at once while nothing waits', () => {
  const f = fake([]);
  f.w.write(Buffer.from('a\nb\n'));
  assert.deepEqual(f.fd, ['a\nb\n']);
  assert.deepEqual(f.stream, []);
  assert.equal(f.w.pendingBytes(), 0);
});

test('EAGAIN: the piece goes to the stream alone, a copy; later pieces wait in order and are not joined to it', () => {
  const f = fake(['EAGAIN']);
  const bytes = Buffer.from('one\n');
  f.w.write(bytes);
  bytes.fill(0x78); // the caller reuses its buffer at once
  f.w.write(Buffer.from('two\n'));
  f.w.write(Buffer.from('three\n'));
  assert.deepEqual(f.stream.map((s) => s.text), ['one\n'], 'one piece in the stream at a time');
  assert.equal(f.w.pendingBytes(), 14);
  f.stream[0]?.done();
  // Once the stream has written it, the rest goes to the descriptor directly, piece by piece.
  assert.deepEqual(f.fd, ['two\n', 'three\n']);
  assert.equal(f.w.pendingBytes(), 0);
});

test('still full when the stream is done: the next piece goes to the stream, alone again', () => {
  const f = fake(['EAGAIN', 'EAGAIN']);
  f.w.write(Buffer.from('one\n'));
  f.w.write(Buffer.from('two\n'));
  f.w.write(Buffer.from('three\n'));
  f.stream[0]?.done();
  assert.deepEqual(f.stream.map((s) => s.text), ['two\n']);
  f.stream[0]?.done();
  assert.deepEqual(f.fd, ['three\n']);
});

test('a part written (a piece longer than the pipe takes at once): only the rest goes to the stream', () => {
  const f = fake([5, 'EAGAIN']);
  f.w.write(Buffer.from('first\nsecond\n'));
  assert.deepEqual(f.fd, ['first']);
  assert.deepEqual(f.stream.map((s) => s.text), ['\nsecond\n']);
});

test('a part written, then the rest: both on the descriptor, in order', () => {
  const f = fake([3, 100]);
  f.w.write(Buffer.from('abcdef\n'));
  assert.deepEqual(f.fd, ['abc', 'def\n']);
  assert.deepEqual(f.stream, []);
});

test('past the bound, pieces are dropped and their lines counted, told once everything waiting is written; a must piece is kept', () => {
  const f = fake(['EAGAIN'], 10);
  f.w.write(Buffer.from('a\nb\n')); // to the stream: 4 waiting
  f.w.write(Buffer.from('c\nd\ne\nf\n')); // 4 waiting, not past the bound: kept (12 waiting)
  f.w.write(Buffer.from('g\nh\n')); // past it: dropped
  f.w.write(Buffer.from('partial')); // a piece without newline counts as one line
  f.w.write(Buffer.from('READY\n'), true);
  assert.deepEqual(f.told, []);
  let idle = 0;
  f.w.whenIdle(() => idle++);
  f.stream[0]?.done();
  assert.deepEqual(f.fd, ['c\nd\ne\nf\n', 'READY\n']);
  assert.deepEqual(f.told, [3]);
  assert.equal(idle, 1);
});

test('EPIPE (the reader is gone) is told once, nothing is written after, and nothing throws', () => {
  const f = fake(['EPIPE']);
  f.w.write(Buffer.from('lost\n'));
  f.w.write(Buffer.from('lost too\n'));
  assert.deepEqual(f.failures, ['EPIPE']);
  assert.deepEqual(f.fd, []);
  assert.deepEqual(f.stream, []);
  assert.ok(f.isFailed());
});

test('EPIPE while pieces wait: they are let go, and whenIdle is told', () => {
  const f = fake(['EAGAIN', 'EPIPE']);
  f.w.write(Buffer.from('one\n'));
  f.w.write(Buffer.from('two\n'));
  let idle = 0;
  f.w.whenIdle(() => idle++);
  f.stream[0]?.done();
  assert.deepEqual(f.failures, ['EPIPE']);
  assert.equal(f.w.pendingBytes(), 0);
  assert.equal(idle, 1);
});
