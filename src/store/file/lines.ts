// Reading a data file line by line, a chunk at a time, so that its size is bounded by the
// disk and not by V8's largest string (2^29 - 24 characters, about 512 MiB of ASCII): the
// snapshot and the journals are both one JSON text per line.
import { closeSync, readSync } from 'node:fs';
import { openRegularFileSync } from '../../core/index.js';

const NEWLINE = 0x0a;
/** Bytes read per chunk: one decode and a few thousand lines per read. */
export const DEFAULT_CHUNK_BYTES = 1024 * 1024;
/** A longer line is damage, not data: one pet's JSON is a few KiB at most. */
export const MAX_LINE_BYTES = 64 * 1024 * 1024;

export interface LineReadOptions {
  /** Bytes read per chunk (tests make it small). */
  chunkBytes?: number;
  /** Longest line accepted, in bytes. */
  maxLineBytes?: number;
}

export interface LinesRead {
  /** onLine returned false: the rest of the file was not read. */
  stopped: boolean;
  /** Bytes read: the whole file, unless onLine stopped early. */
  bytes: number;
  /** Lines passed to onLine (each ended by a newline). */
  lines: number;
  /** Text after the last newline ('' if the file ends with one): an unfinished last line. */
  tail: string;
  /** Byte offset where `tail` starts. */
  tailStart: number;
  /** Length of the longest string decoded at once: about a chunk, never the whole file. */
  largestString: number;
}

/** A line longer than maxLineBytes: the file is not what it should be. */
export class LineTooLongError extends Error {
  readonly line: number;
  constructor(line: number, maxBytes: number) {
    super(`line ${line} is longer than ${maxBytes} bytes`);
    this.line = line;
  }
}

/**
 * Calls onLine(text, number) for each newline-terminated line of the file, in order, without
 * the newline; onLine may return false to stop. Throws what openSync/readSync throw (ENOENT
 * included; NotRegularFileError for anything but a regular file). Lines are decoded from bytes cut at a newline, which is never part of a
 * multi-byte UTF-8 character.
 */
export function forEachLine(
  path: string,
  onLine: (text: string, line: number) => boolean | void,
  opts: LineReadOptions = {},
): LinesRead {
  const maxLine = opts.maxLineBytes ?? MAX_LINE_BYTES;
  let buf = Buffer.allocUnsafe(Math.min(opts.chunkBytes ?? DEFAULT_CHUNK_BYTES, maxLine + 1));
  // A FIFO or a device (a symlink to /dev/zero) is refused, not waited on or read forever.
  const fd = openRegularFileSync(path);
  try {
    let have = 0; // bytes in buf not yet passed on: the start of an unfinished line
    let consumed = 0; // file offset of buf[0]
    let line = 0;
    let largestString = 0;
    for (;;) {
      if (have === buf.length) {
        // The unfinished line fills the buffer: grow it, up to the longest line accepted.
        if (have > maxLine) throw new LineTooLongError(line + 1, maxLine);
        const bigger = Buffer.allocUnsafe(Math.min(buf.length * 2, maxLine + 1));
        buf.copy(bigger, 0, 0, have);
        buf = bigger;
      }
      const n = readSync(fd, buf, have, buf.length - have, null);
      if (n === 0) break;
      const end = have + n;
      const lastNewline = buf.lastIndexOf(NEWLINE, end - 1);
      if (lastNewline < have) {
        have = end;
        continue;
      }
      const text = buf.toString('utf8', 0, lastNewline + 1);
      if (text.length > largestString) largestString = text.length;
      let start = 0;
      for (let nl = text.indexOf('\n'); nl !== -1; nl = text.indexOf('\n', start)) {
        if (onLine(text.slice(start, nl), ++line) === false) return { stopped: true, bytes: consumed, lines: line, tail: '', tailStart: consumed, largestString };
        start = nl + 1;
      }
      buf.copy(buf, 0, lastNewline + 1, end);
      consumed += lastNewline + 1;
      have = end - (lastNewline + 1);
    }
    const tail = buf.toString('utf8', 0, have);
    return { stopped: false, bytes: consumed + have, lines: line, tail, tailStart: consumed, largestString: Math.max(largestString, tail.length) };
  } finally {
    closeSync(fd);
  }
}
