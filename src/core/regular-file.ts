// Opening the files the service reads whole or line by line (config, limiter state, data file,
// journals): only a regular file is read. A named pipe would block the open (at start, or a
// SIGHUP reload for good), and a device such as /dev/zero or /dev/urandom never ends, so
// reading it grows memory until the process is killed. Whole-file reads are also capped.
import { closeSync, constants, fstatSync, openSync, readSync, type Stats } from 'node:fs';
import { open } from 'node:fs/promises';

/**
 * O_NONBLOCK: a FIFO then opens at once, without waiting for a writer, and fstat refuses it.
 * On a regular file the flag changes nothing (POSIX). Windows has no such flag.
 */
const READ_FLAGS = constants.O_RDONLY | (constants.O_NONBLOCK ?? 0);

/** The path names something other than a regular file (a FIFO, a device, a directory...). */
export class NotRegularFileError extends Error {
  override readonly name = 'NotRegularFileError';
  readonly code = 'ENOTREG';
  constructor(stats: Stats) {
    super(`it is not a regular file but ${whatItIs(stats)}`);
  }
}

/** A file longer than a whole-file read accepts. */
export class FileTooLargeError extends Error {
  override readonly name = 'FileTooLargeError';
  readonly code = 'EFBIG';
  constructor(maxBytes: number, size?: number) {
    super(`it is larger than ${sizeText(maxBytes)}${size === undefined ? '' : ` (${size} bytes)`}, the most read whole`);
  }
}

function whatItIs(stats: Stats): string {
  if (stats.isDirectory()) return 'a directory';
  if (stats.isFIFO()) return 'a named pipe (FIFO)';
  if (stats.isCharacterDevice()) return 'a character device';
  if (stats.isBlockDevice()) return 'a block device';
  if (stats.isSocket()) return 'a socket';
  return 'something else';
}

/** 16777216 -> "16 MiB"; other sizes in bytes. */
export function sizeText(bytes: number): string {
  return bytes % (1024 * 1024) === 0 ? `${bytes / (1024 * 1024)} MiB` : `${bytes} bytes`;
}

/** Opens `path` for reading; NotRegularFileError (the fd closed) unless it is a regular file. */
export function openRegularFileSync(path: string): number {
  const fd = openSync(path, READ_FLAGS);
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile()) throw new NotRegularFileError(stats);
    return fd;
  } catch (err) {
    closeSync(fd);
    throw err;
  }
}

/**
 * The bytes of the regular file `path`, at most maxBytes of them (FileTooLargeError beyond,
 * also when the file grows while it is read). Throws what open throws (ENOENT included).
 */
export async function readRegularFile(path: string, maxBytes: number): Promise<Buffer> {
  const handle = await open(path, READ_FLAGS);
  try {
    const stats = await handle.stat();
    if (!stats.isFile()) throw new NotRegularFileError(stats);
    if (stats.size > maxBytes) throw new FileTooLargeError(maxBytes, stats.size);
    // One byte more than the size: a file that grew since fstat is noticed, and read on.
    let buf: Buffer = Buffer.allocUnsafe(Math.min(stats.size, maxBytes) + 1);
    let have = 0;
    for (;;) {
      if (have === buf.length) buf = grow(buf, maxBytes);
      const { bytesRead } = await handle.read(buf, have, buf.length - have, null);
      if (bytesRead === 0) return buf.subarray(0, have);
      have += bytesRead;
    }
  } finally {
    await handle.close();
  }
}

/** readRegularFile, synchronously. */
export function readRegularFileSync(path: string, maxBytes: number): Buffer {
  const fd = openRegularFileSync(path);
  try {
    const size = fstatSync(fd).size;
    if (size > maxBytes) throw new FileTooLargeError(maxBytes, size);
    let buf: Buffer = Buffer.allocUnsafe(Math.min(size, maxBytes) + 1);
    let have = 0;
    for (;;) {
      if (have === buf.length) buf = grow(buf, maxBytes);
      const n = readSync(fd, buf, have, buf.length - have, null);
      if (n === 0) return buf.subarray(0, have);
      have += n;
    }
  } finally {
    closeSync(fd);
  }
}

/** A buffer twice as long with the same bytes; FileTooLargeError past maxBytes. */
function grow(buf: Buffer, maxBytes: number): Buffer {
  if (buf.length > maxBytes) throw new FileTooLargeError(maxBytes);
  const bigger = Buffer.allocUnsafe(Math.min(buf.length * 2, maxBytes + 1));
  buf.copy(bigger);
  return bigger;
}
