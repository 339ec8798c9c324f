// The journal: one JSON line per created pet (or per reset), appended and made durable before
// a create is acknowledged. Replayed over the snapshot at start.
import { constants, fstatSync } from 'node:fs';
import { open } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { checkJournalRecord, petJson } from '../codec.js';
import { writeAll } from './disk.js';
import type { IoHook, StorePaths } from './disk.js';
import { StoreOpenError } from '../errors.js';
import type { KeyTable } from '../idempotency.js';
import type { PetIndex } from '../pet-index.js';
import { forEachLine, LineTooLongError } from './lines.js';
import type { LinesRead } from './lines.js';
import { describeError, errorCode, printable, type Logger, type Pet } from '../../core/index.js';

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

/** What replay carries from one journal file to the next (`.old`, then the active one). */
export class ReplayCheck {
  /**
   * Where the keys of pet records go (`keys`), judged live or expired at `now`. A record
   * below nextId adds no key: the snapshot that holds its pet holds its key too, unless a
   * compaction dropped it as expired.
   */
  constructor(readonly keys: KeyTable, readonly now: number) {}

  /** Id of the last pet record since the start or the last reset: the next must be above it. */
  previousId = 0;
  /**
   * The first record found below nextId that is not the pet already stored with its id. A
   * later reset makes it moot (what it would have overlapped is gone); otherwise it refuses
   * the start once every journal is read.
   */
  mismatch: StoreOpenError | undefined;
}

/**
 * Applies a journal file to the index, checking every record. Pet ids ascend strictly from
 * one record to the next, across `.old` and the active journal, restarting after a reset.
 * A record whose id is below the index's nextId was written before the snapshot (a crash
 * came between writing the snapshot and dropping that journal); it must be exactly the pet
 * the store holds with that id, and is then skipped.
 *
 * Only the active journal may end in an unfinished line (no newline: a write cut short by a
 * crash, so never acknowledged): it is dropped with a warning. A line that ends in a newline
 * was written whole, so any damage in it, as anywhere else, refuses the start and names the
 * line. The file is read a chunk at a time, never as one string.
 */
export function replayJournal(
  path: string,
  paths: StorePaths,
  index: PetIndex,
  allowTornTail: boolean,
  logger: Logger,
  check: ReplayCheck,
): ReplayResult {
  const damaged = (line: number, what: string): StoreOpenError =>
    new StoreOpenError(
      paths.given,
      `Journal file ${path} is damaged at line ${line} (${what}); refusing to start so that it is not overwritten.`,
    );
  const apply = (text: string, line: number): void => {
    const parsed = parseLine(text);
    if (parsed instanceof Error) throw damaged(line, `not JSON: ${printable(parsed.message)}`);
    const record = checkJournalRecord(parsed);
    if (typeof record === 'string') throw damaged(line, `the record ${record}`);
    if (record.kind === 'reset') {
      index.clear();
      check.keys.clear();
      check.previousId = 0;
      check.mismatch = undefined;
      return;
    }
    const pet = record.pet;
    if (pet.id <= check.previousId) throw damaged(line, `pet id ${pet.id} is not above the record before it (${check.previousId})`);
    check.previousId = pet.id;
    if (pet.id >= index.nextId) {
      index.add(pet);
      if (record.idem !== undefined) check.keys.load(record.idem, pet.id, check.now);
    } else if (check.mismatch === undefined && !samePet(index.get(pet.id), pet)) {
      check.mismatch = damaged(line, `pet id ${pet.id} is below the next id (${index.nextId}) but is not the pet stored with that id`);
    }
  };
  let read: LinesRead;
  try {
    read = forEachLine(path, apply);
  } catch (err) {
    if (err instanceof StoreOpenError) throw err;
    if (err instanceof LineTooLongError) throw damaged(err.line, err.message);
    if (errorCode(err) === 'ENOENT') return { existed: false, goodBytes: 0, totalBytes: 0 };
    throw new StoreOpenError(paths.given, `Cannot read journal file ${path}: ${describeError(err)}.`, { cause: err });
  }
  if (read.tail === '') return { existed: true, goodBytes: read.bytes, totalBytes: read.bytes };
  const line = read.lines + 1;
  if (!allowTornTail) throw damaged(line, 'the line is incomplete');
  logger.log('warn', 'dropping a torn last journal line (a write cut short, never acknowledged)', {
    journal: path,
    line,
    bytes: read.bytes - read.tailStart,
  });
  return { existed: true, goodBytes: read.tailStart, totalBytes: read.bytes };
}

function samePet(stored: Readonly<Pet> | undefined, pet: Readonly<Pet>): boolean {
  return stored !== undefined && petJson(stored) === petJson(pet);
}

function parseLine(line: string): unknown {
  try {
    return JSON.parse(line) as unknown;
  } catch (err) {
    return err instanceof Error ? err : new Error(String(err));
  }
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
