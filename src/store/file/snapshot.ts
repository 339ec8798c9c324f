// The snapshot: the whole store as one JSON document, one pet per line, replaced atomically (written to a
// temporary file, fsynced, renamed over the data file, directory fsynced), so the data file
// is never half-written.
import { constants as bufferConstants } from 'node:buffer';
import { open, rename } from 'node:fs/promises';
import { checkNextId, checkSnapshot, checkStoredPet, parseHead, petJson, snapshotHead, SNAPSHOT_END, SNAPSHOT_TAIL } from '../codec.js';
import type { SnapshotContent } from '../codec.js';
import { fsyncDir, unlinkIfPresent, writeAll } from './disk.js';
import type { IoHook, StorePaths } from './disk.js';
import { StoreOpenError } from '../errors.js';
import { KeyedPet, type KeyCursor, type KeyRecord } from '../idempotency.js';
import { itemAt, type IndexView, type Segments } from '../pet-index.js';
import { forEachLine, LineTooLongError } from './lines.js';
import type { LineReadOptions, LinesRead } from './lines.js';
import { describeError, errorCode, printable, readJsonFileSync, type Logger, type Pet } from '../../core/index.js';

/** Pets per write: about 0.5 MB. */
const PETS_PER_CHUNK = 8192;
/**
 * Pets serialized between two turns of the event loop: a pet with an idempotency key costs a
 * SHA-256 of its fields (its fingerprint), a few microseconds, so a whole write's worth of
 * them (8,192) held requests up for tens of ms. 1,024 keep each turn around a millisecond.
 */
const PETS_PER_TURN = 1024;

/** A pet of the snapshot that carries an idempotency key. */
export interface SnapshotKey {
  readonly id: number;
  readonly record: KeyRecord;
}

export interface LoadedSnapshot extends SnapshotContent {
  /** The keys its lines carry, in ascending pet id (none in the whole-document layout). */
  keys: SnapshotKey[];
  /** Size of the file in bytes (0 when there is none). */
  bytes: number;
  /** Length of the longest string decoded while reading (see lines.ts). */
  largestString: number;
}

/**
 * Reads and checks the snapshot. A missing file is an empty store; anything unreadable or
 * malformed is a StoreOpenError, and the file is left exactly as it is.
 *
 * The snapshot is read a chunk at a time, one pet per line (the layout writeSnapshot
 * writes), so its size is bounded by the disk, not by V8's largest string. A file in any
 * other layout (one JSON document on one line, as older versions or hand-made files have)
 * is parsed whole, as before.
 */
export function readSnapshot(paths: StorePaths, opts: LineReadOptions = {}): LoadedSnapshot {
  const reader = new SnapshotLines();
  let read: LinesRead;
  try {
    read = forEachLine(paths.snapshot, (text, line) => reader.line(text, line), opts);
  } catch (err) {
    if (errorCode(err) === 'ENOENT') return { nextId: 1, pets: [], keys: [], bytes: 0, largestString: 0 };
    if (err instanceof LineTooLongError) throw damagedSnapshot(paths, err.line, err.message);
    if (err instanceof SnapshotDamage) throw damagedSnapshot(paths, err.line, err.message);
    throw new StoreOpenError(paths.given, `Cannot read data file ${paths.given}: ${describeError(err)}.`, { cause: err });
  }
  let content: SnapshotContent | undefined;
  try {
    content = read.stopped ? undefined : reader.finish(read.tail, read.lines + 1);
  } catch (err) {
    if (err instanceof SnapshotDamage) throw damagedSnapshot(paths, err.line, err.message);
    throw err;
  }
  if (content === undefined) return readWholeSnapshot(paths);
  return { ...content, keys: reader.keys, bytes: read.bytes, largestString: read.largestString };
}

function damagedSnapshot(paths: StorePaths, line: number, what: string): StoreOpenError {
  return new StoreOpenError(
    paths.given,
    `Data file ${paths.given} is damaged at line ${line} (${what}); refusing to start so that it is not overwritten.`,
  );
}

class SnapshotDamage extends Error {
  constructor(readonly line: number, message: string) {
    super(message);
  }
}

/**
 * The line layout, checked as it streams by:
 *   {"format":"petstore-snapshot","version":1,"nextId":N,"pets":[
 *   {pet},        (every pet but the last ends with a comma)
 *   {pet}
 *   ]}
 */
class SnapshotLines {
  #nextId = 0;
  #lastId = 0;
  readonly #pets: Pet[] = [];
  readonly keys: SnapshotKey[] = [];
  /** 'head': first line not seen; 'pet': a pet (or the end of an empty list) comes next. */
  #expect: 'head' | 'pet' | 'pet-or-end' | 'end' | 'nothing' = 'head';

  /** Takes one line; false (stop reading) when the file is not in the line layout at all. */
  line(text: string, line: number): boolean {
    switch (this.#expect) {
      case 'head': {
        const nextId = parseHead(text);
        if (nextId === undefined) return false;
        this.#nextId = nextId;
        this.#expect = 'pet-or-end';
        return true;
      }
      case 'pet':
      case 'pet-or-end': {
        if (text === SNAPSHOT_END) {
          if (this.#expect === 'pet') throw new SnapshotDamage(line, 'a pet was expected after the comma');
          this.#expect = 'nothing';
          return true;
        }
        const more = text.endsWith(',');
        this.#add(more ? text.slice(0, -1) : text, line);
        this.#expect = more ? 'pet' : 'end';
        return true;
      }
      case 'end':
        if (text !== SNAPSHOT_END) throw new SnapshotDamage(line, `"${SNAPSHOT_END}" was expected after the last pet`);
        this.#expect = 'nothing';
        return true;
      case 'nothing':
        throw new SnapshotDamage(line, 'there is text after the end of the document');
    }
  }

  /**
   * After the last newline: `tail` is what follows it (normally nothing). Undefined if the
   * file is not in the line layout at all (its first line is not the head).
   */
  finish(tail: string, line: number): SnapshotContent | undefined {
    if (tail !== '' && !this.line(tail, line)) return undefined;
    if (this.#expect === 'head') return undefined;
    if (this.#expect !== 'nothing') throw new SnapshotDamage(line, 'the file ends before the end of the document');
    const problem = checkNextId(this.#nextId, this.#lastId);
    if (problem !== undefined) throw new SnapshotDamage(1, `the document ${problem}`);
    return { nextId: this.#nextId, pets: this.#pets };
  }

  #add(text: string, line: number): void {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (err) {
      throw new SnapshotDamage(line, `not JSON: ${printable(describeError(err))}`);
    }
    const checked = checkStoredPet(value);
    if (typeof checked === 'string') throw new SnapshotDamage(line, `the pet ${checked}`);
    let pet: Pet;
    if (checked instanceof KeyedPet) {
      pet = checked.pet;
      this.keys.push({ id: pet.id, record: checked.idem });
    } else {
      pet = checked;
    }
    if (pet.id <= this.#lastId) throw new SnapshotDamage(line, `pet id ${pet.id} is not above the one before it (${this.#lastId})`);
    if (pet.id >= this.#nextId) throw new SnapshotDamage(line, `pet id ${pet.id} is not below "nextId" (${this.#nextId})`);
    this.#lastId = pet.id;
    this.#pets.push(pet);
  }
}

/** A snapshot in another layout than one pet per line: parsed as one document. */
function readWholeSnapshot(paths: StorePaths): LoadedSnapshot {
  // Past V8's longest string it could not be parsed whole anyway: refused before it is read.
  const read = readJsonFileSync(paths.snapshot, bufferConstants.MAX_STRING_LENGTH);
  if (read.kind === 'missing' || read.kind === 'unreadable') {
    throw new StoreOpenError(paths.given, `Cannot read data file ${paths.given}: ${describeError(read.error)}.`, { cause: read.error });
  }
  if (read.kind === 'invalid') {
    throw new StoreOpenError(
      paths.given,
      `Data file ${paths.given} is not valid JSON (${describeError(read.error)}); refusing to start so that it is not overwritten.`,
      { cause: read.error },
    );
  }
  const { value: doc, text } = read;
  const content = checkSnapshot(doc);
  if (typeof content === 'string') {
    throw new StoreOpenError(
      paths.given,
      `Data file ${paths.given} is not a petstore snapshot: it ${content}; refusing to start so that it is not overwritten.`,
    );
  }
  return { ...content, keys: [], bytes: Buffer.byteLength(text), largestString: text.length };
}

/**
 * Writes the first view.count pets as the new snapshot and returns its size in bytes. Pets
 * are immutable and the view's lists only grow, so it can be read across awaits.
 * `stillOurs` throws when the data file is no longer this process's to write (its lock was
 * taken over while the snapshot was written): then the snapshot is discarded, not renamed.
 */
export async function writeSnapshot(
  paths: StorePaths, view: IndexView, keys: KeyCursor, beforeIo: IoHook, logger: Logger, stillOurs: () => void,
): Promise<number> {
  const handle = await open(paths.tmp, 'w');
  let bytes = 0;
  try {
    const emit = async (text: string): Promise<void> => {
      const data = Buffer.from(text);
      beforeIo?.('snapshot-write');
      await writeAll(handle, data, bytes);
      bytes += data.length;
    };
    await emit(snapshotHead(view.nextId));
    for (let start = 0; start < view.count; start += PETS_PER_CHUNK) {
      const end = Math.min(view.count, start + PETS_PER_CHUNK);
      const pieces: string[] = [];
      for (let from = start; from < end; from += PETS_PER_TURN) {
        if (from > start) await new Promise((resolve) => setImmediate(resolve));
        pieces.push(chunkText(view.pets, keys, from, Math.min(end, from + PETS_PER_TURN)));
      }
      await emit(pieces.join(''));
    }
    await emit(SNAPSHOT_TAIL);
    await handle.sync();
    stillOurs();
  } catch (err) {
    await closeAndDiscard(handle, paths.tmp, logger);
    throw err;
  }
  await handle.close();
  await rename(paths.tmp, paths.snapshot);
  await fsyncDir(paths.dir);
  return bytes;
}

/**
 * Pets [start, end) as snapshot text: one per line, comma before all but the very first; a
 * pet with a live idempotency key carries it in its line, as its journal line did.
 */
function chunkText(pets: Segments<Readonly<Pet>>, keys: KeyCursor, start: number, end: number): string {
  const parts: string[] = new Array<string>(end - start);
  for (let i = start; i < end; i++) {
    const pet = itemAt(pets, i);
    parts[i - start] = keys.line(pet, petJson(pet));
  }
  return (start === 0 ? '\n' : ',\n') + parts.join(',\n');
}

async function closeAndDiscard(handle: { close(): Promise<void> }, tmp: string, logger: Logger): Promise<void> {
  try {
    await handle.close();
    await unlinkIfPresent(tmp);
  } catch (err) {
    // The write already failed and that error is what the caller reports; a leftover
    // temporary file is harmless (the next snapshot truncates it).
    logger.log('warn', 'could not remove a temporary snapshot file', { file: tmp, error: describeError(err) });
  }
}
