// The journal: one JSON line per created pet (or per reset), appended and made durable before
// a create is acknowledged. Replayed over the snapshot at start.
import { constants, fstatSync, readFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { checkJournalRecord } from './store-codec.js';
import { writeAll } from './store-disk.js';
import type { IoHook, StorePaths } from './store-disk.js';
import { describeError, errorCode, StoreOpenError } from './store-errors.js';
import type { PetIndex } from './store-index.js';
import type { Logger } from './types.js';

const NEWLINE = 0x0a;

/**
 * The journal is opened O_DSYNC where the platform has it: each write then returns only once
 * its data is on disk, exactly what a write followed by fdatasync guarantees (POSIX
 * "synchronized I/O data integrity completion"; PostgreSQL's open_datasync), in one
 * thread-pool round trip per batch instead of two. Without it, append() calls datasync.
 */
const O_DSYNC: number = constants.O_DSYNC ?? 0;

export interface ReplayResult {
  /** False if there was no journal file. */
  existed: boolean;
  /** Bytes of the file that hold whole, valid records: where the next append goes. */
  goodBytes: number;
  /** Size of the file as found. */
  totalBytes: number;
}

/**
 * Applies a journal file to the index. A record whose id is below the index's nextId is
 * already there (the snapshot was written after it, and the crash came before the journal
 * was dropped) and is skipped; a reset record empties the index.
 *
 * Only the active journal may end in a torn line (a write cut short by a crash, so never
 * acknowledged): it is dropped with a warning. Any other damage refuses the start.
 */
export function replayJournal(path: string, paths: StorePaths, index: PetIndex, allowTornTail: boolean, logger: Logger): ReplayResult {
  let buf: Buffer;
  try {
    buf = readFileSync(path);
  } catch (err) {
    if (errorCode(err) === 'ENOENT') return { existed: false, goodBytes: 0, totalBytes: 0 };
    throw new StoreOpenError(paths.given, `Cannot read journal file ${path}: ${describeError(err)}.`, { cause: err });
  }
  const text = buf.toString('utf8');
  const damaged = (line: number, what: string): StoreOpenError =>
    new StoreOpenError(
      paths.given,
      `Journal file ${path} is damaged at line ${line} (${what}); refusing to start so that it is not overwritten.`,
    );
  let start = 0;
  let line = 0;
  while (start < text.length) {
    line++;
    const newline = text.indexOf('\n', start);
    const end = newline === -1 ? text.length : newline;
    const isLast = newline === -1 || newline === text.length - 1;
    const parsed = parseLine(text.slice(start, end));
    if (isLast && allowTornTail && (newline === -1 || parsed instanceof Error)) {
      const goodBytes = startOfLastLine(buf);
      logger.log('warn', 'dropping a torn last journal line (a write cut short, never acknowledged)', {
        journal: path,
        line,
        bytes: buf.length - goodBytes,
      });
      return { existed: true, goodBytes, totalBytes: buf.length };
    }
    if (newline === -1) throw damaged(line, 'the line is incomplete');
    if (parsed instanceof Error) throw damaged(line, `not JSON: ${parsed.message}`);
    const record = checkJournalRecord(parsed);
    if (typeof record === 'string') throw damaged(line, `the record ${record}`);
    if (record.kind === 'reset') index.clear();
    else if (record.pet.id >= index.nextId) index.add(record.pet);
    start = end + 1;
  }
  return { existed: true, goodBytes: buf.length, totalBytes: buf.length };
}

function parseLine(line: string): unknown {
  try {
    return JSON.parse(line) as unknown;
  } catch (err) {
    return err instanceof Error ? err : new Error(String(err));
  }
}

/**
 * Byte offset where the last line starts. Counted on the bytes, not the decoded text: a torn
 * line may end inside a multi-byte character.
 */
function startOfLastLine(buf: Buffer): number {
  const lastByte = buf.length - 1;
  const from = buf[lastByte] === NEWLINE ? lastByte - 1 : lastByte;
  return from < 0 ? 0 : buf.lastIndexOf(NEWLINE, from) + 1;
}

/** The open, active journal. Appends go at `length`, the end of the last durable batch. */
export class JournalWriter {
  private constructor(
    private readonly handle: FileHandle,
    private durableLength: number,
  ) {}

  /** Opens an existing (or new) journal whose first `goodBytes` are valid; cuts off the rest. */
  static async open(path: string, goodBytes: number, totalBytes: number): Promise<JournalWriter> {
    // Read-write, created if missing, and not O_APPEND: appends are positional (at the
    // durable length) so that a failed batch can be cut off and overwritten.
    const handle = await open(path, constants.O_RDWR | constants.O_CREAT | O_DSYNC, 0o644);
    try {
      if (totalBytes !== goodBytes) {
        await handle.truncate(goodBytes);
        await handle.datasync();
      }
    } catch (err) {
      await handle.close();
      throw err;
    }
    return new JournalWriter(handle, goodBytes);
  }

  /** Creates an empty journal; `exclusive` refuses an existing file instead of emptying it. */
  static async create(path: string, exclusive: boolean): Promise<JournalWriter> {
    const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | (exclusive ? constants.O_EXCL : 0) | O_DSYNC;
    const handle = await open(path, flags, 0o644);
    try {
      await handle.datasync();
    } catch (err) {
      await handle.close();
      throw err;
    }
    return new JournalWriter(handle, 0);
  }

  get length(): number {
    return this.durableLength;
  }

  /**
   * Writes a batch durably (O_DSYNC, else write + fdatasync). A journal whose name was removed
   * (its directory deleted) still accepts writes that no restart would ever find, so that
   * counts as failure.
   */
  async append(data: Buffer, beforeIo: IoHook): Promise<void> {
    beforeIo?.('journal-write');
    await writeAll(this.handle, data, this.durableLength);
    // With O_DSYNC a failed flush is reported by the write itself; the hook still marks
    // the point, so tests can fail "after the bytes went out, before they were durable".
    beforeIo?.('journal-sync');
    if (O_DSYNC === 0) await this.handle.datasync();
    this.assertLinked();
    this.durableLength += data.length;
  }

  /** After a failed append: cut the file back to its last durable length and sync that. */
  async truncateToDurable(): Promise<void> {
    await this.handle.truncate(this.durableLength);
    await this.handle.datasync();
    this.assertLinked();
  }

  async close(): Promise<void> {
    await this.handle.close();
  }

  /**
   * False once the file has been removed from its directory (e.g. the directory deleted).
   * fstat of an open file reads the in-memory inode: synchronous, no thread-pool trip.
   */
  isLinked(): boolean {
    return fstatSync(this.handle.fd).nlink > 0;
  }

  private assertLinked(): void {
    if (!this.isLinked()) throw new Error('the journal file has been removed from its directory');
  }
}
