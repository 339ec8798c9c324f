// The log's lines batched per turn into a reused buffer (a Latin-1 copy when every line is
// ASCII, UTF-8 otherwise); test/core/stdio.test.ts has their way out to stdout.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BATCH_CHARS, batchingSink, isAscii, jsonLogger } from '../../src/core/log.js';

/** A batching sink whose writes are collected as text (decoded as UTF-8) and as byte counts. */
function collected(): { out: ReturnType<typeof batchingSink>; text: () => string; writes: Uint8Array[] } {
  const writes: Uint8Array[] = [];
  const out = batchingSink((bytes) => writes.push(Buffer.from(bytes)));
  return { out, writes, text: () => Buffer.concat(writes).toString('utf8') };
}

test('batchingSink: held until released; then one write per turn, flushed at once on demand', async () => {
  const c = collected();
  c.out.sink('early\n', true);
  await new Promise((r) => setImmediate(r));
  assert.equal(c.writes.length, 0, 'held before release');
  c.out.release();
  assert.equal(c.text(), 'early\n');
  c.out.sink('a\n', true);
  c.out.sink('b\n');
  assert.equal(c.writes.length, 1, 'not before the end of the turn');
  await new Promise((r) => setImmediate(r));
  assert.equal(c.writes.length, 2);
  assert.equal(c.text(), 'early\na\nb\n');
  c.out.sink('at shutdown\n', true);
  c.out.flush();
  assert.equal(c.text(), 'early\na\nb\nat shutdown\n');
});

test('batchingSink: non-ASCII lines are UTF-8, alone or among ASCII ones, told or not', async () => {
  const lines = ['plain\n', '{"url":"/caf\u00e9/\u20ac/\ud83d\ude00"}\n', 'after\n', '\u00ff latin-1 range\n'];
  for (const hint of [undefined, false]) {
    const c = collected();
    c.out.release();
    for (const line of lines) c.out.sink(line, isAscii(line) ? true : hint);
    c.out.flush();
    assert.equal(c.text(), lines.join(''));
    assert.equal(Buffer.concat(c.writes).length, Buffer.byteLength(lines.join('')));
  }
});

test('batchingSink: a line larger than the buffer, ASCII or not, goes out whole and exact', () => {
  for (const big of [`${'x'.repeat(5 * BATCH_CHARS)}\n`, `${'\u00e9'.repeat(3 * BATCH_CHARS)}\n`, `${'\u20ac'.repeat(BATCH_CHARS)}\n`]) {
    const c = collected();
    c.out.release();
    c.out.sink('before\n', true);
    c.out.sink(big, isAscii(big));
    c.out.sink('after\n', true);
    c.out.flush();
    assert.equal(c.text(), `before\n${big}after\n`);
  }
});

test('batchingSink: past BATCH_CHARS a batch is written within the turn; nothing lost or reordered', () => {
  const c = collected();
  c.out.release();
  const lines = Array.from({ length: 3000 }, (_, i) => `{"n":${i},"pad":"${'p'.repeat(i % 90)}"}\n`);
  for (const line of lines) c.out.sink(line, true);
  assert.ok(c.writes.length >= 2, 'written before the turn ended');
  c.out.flush();
  assert.equal(c.text(), lines.join(''));
});

test('batchingSink: the buffer is reused, so a write that keeps bytes must copy them (the sink does not hand out stale views)', () => {
  const views: Uint8Array[] = [];
  const out = batchingSink((bytes) => views.push(bytes));
  out.release();
  out.sink('first\n', true);
  out.flush();
  const copy = Buffer.from(views[0] as Uint8Array).toString();
  out.sink('other\n', true);
  out.flush();
  assert.equal(copy, 'first\n');
  assert.equal(Buffer.from(views[1] as Uint8Array).toString(), 'other\n');
});

test('jsonLogger.logJson: a line promised ASCII is copied as Latin-1; a hostname or message that is not makes it UTF-8', () => {
  const c = collected();
  c.out.release();
  const logger = jsonLogger('info', c.out.sink);
  logger.logJson?.('info', 'caf\u00e9 ready', ',"a":1', true);
  logger.logJson?.('info', 'plain', ',"u":"\u00e9"', false);
  logger.logJson?.('info', 'plain', ',"u":"x"', true);
  c.out.flush();
  const parsed = c.text().trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
  assert.deepEqual(parsed.map((p) => [p.msg, p.a ?? p.u]), [['caf\u00e9 ready', 1], ['plain', '\u00e9'], ['plain', 'x']]);
});
