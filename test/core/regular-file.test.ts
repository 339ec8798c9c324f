// Reading only regular files, whole reads capped; JSON errors made printable.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FileTooLargeError, NotRegularFileError, openRegularFileSync, readRegularFile, readRegularFileSync } from '../../src/core/regular-file.js';
import { readJsonFile, readJsonFileSync } from '../../src/core/json-file.js';
import { printable } from '../../src/core/text.js';
import { tempDir } from '../support/bundle.js';

const unix = process.platform === 'win32' ? 'no FIFOs or /dev/zero' : false;

describe('readRegularFile', () => {
  test('reads a regular file whole, up to the cap exactly', async () => {
    const file = join(tempDir(), 'f');
    writeFileSync(file, 'x'.repeat(100));
    assert.equal((await readRegularFile(file, 100)).toString(), 'x'.repeat(100));
    assert.equal(readRegularFileSync(file, 100).toString(), 'x'.repeat(100));
    writeFileSync(file, '');
    assert.equal((await readRegularFile(file, 100)).length, 0);
  });

  test('one byte over the cap: FileTooLargeError naming the cap', async () => {
    const file = join(tempDir(), 'f');
    writeFileSync(file, 'x'.repeat(16 * 1024 * 1024 + 1));
    await assert.rejects(readRegularFile(file, 16 * 1024 * 1024), (err: Error) => {
      assert.ok(err instanceof FileTooLargeError);
      assert.match(err.message, /larger than 16 MiB \(16777217 bytes\)/);
      return true;
    });
    assert.throws(() => readRegularFileSync(file, 16 * 1024 * 1024), FileTooLargeError);
  });

  test('a directory is refused as one', async () => {
    const dir = join(tempDir(), 'd');
    mkdirSync(dir);
    await assert.rejects(readRegularFile(dir, 100), /not a regular file but a directory/);
    assert.throws(() => openRegularFileSync(dir), NotRegularFileError);
  });

  test('a missing file: ENOENT, as open says', async () => {
    await assert.rejects(readRegularFile(join(tempDir(), 'none'), 100), { code: 'ENOENT' });
    assert.throws(() => openRegularFileSync(join(tempDir(), 'none')), { code: 'ENOENT' });
  });

  test('a FIFO without a writer is refused at once, not waited on', { skip: unix }, async () => {
    const fifo = join(tempDir(), 'fifo');
    execFileSync('mkfifo', [fifo]);
    await assert.rejects(readRegularFile(fifo, 100), /not a regular file but a named pipe \(FIFO\)/);
    assert.throws(() => readRegularFileSync(fifo, 100), /named pipe/);
  });

  test('an endless device is refused, not read', { skip: unix }, async () => {
    const link = join(tempDir(), 'zero');
    symlinkSync('/dev/zero', link);
    await assert.rejects(readRegularFile(link, 1 << 30), /not a regular file but a character device/);
    assert.throws(() => openRegularFileSync(link), /character device/);
  });
});

describe('readJsonFile', () => {
  test('with a cap: a FIFO is unreadable, saying why; without: as before', { skip: unix }, async () => {
    const fifo = join(tempDir(), 'fifo');
    execFileSync('mkfifo', [fifo]);
    const read = await readJsonFile(fifo, 1024);
    assert.equal(read.kind, 'unreadable');
    assert.match(read.kind === 'unreadable' ? read.error.message : '', /named pipe/);
    const file = join(tempDir(), 'ok.json');
    writeFileSync(file, '{"a":1}');
    assert.deepEqual(await readJsonFile(file), { kind: 'ok', value: { a: 1 }, text: '{"a":1}' });
    assert.equal(readJsonFileSync(file, 7).kind, 'ok');
    assert.equal(readJsonFileSync(file, 6).kind, 'unreadable');
  });

  test('a binary file: the parse error holds no raw control byte', async () => {
    const file = join(tempDir(), 'bin.json');
    writeFileSync(file, Buffer.from([0xef, 0x1b, 0x5b, 0x32, 0x4a, 0x07, 0x00, 0xff, 0xfe]));
    const read = await readJsonFile(file, 1024);
    assert.equal(read.kind, 'invalid');
    const message = read.kind === 'invalid' ? read.error.message : '';
    assert.doesNotMatch(message, /[^\x20-\x7e]/, message);
    assert.match(message, /\\x1b/);
  });
});

test('printable escapes all but printable ASCII and cuts long text', () => {
  assert.equal(printable('plain text'), 'plain text');
  assert.equal(printable('a\x1b[2Jb\x07\n\u00e9\ufffd\u2028'), 'a\\x1b[2Jb\\x07\\x0a\\xe9\\ufffd\\u2028');
  assert.equal(printable('x'.repeat(300), 10), `${'x'.repeat(10)}...`);
  assert.equal(printable('x'.repeat(10), 10), 'x'.repeat(10));
});
