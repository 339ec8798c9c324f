// The snapshot: the whole store as one JSON document, replaced atomically (written to a
// temporary file, fsynced, renamed over the data file, directory fsynced), so the data file
// is never half-written.
import { readFileSync } from 'node:fs';
import { open, rename } from 'node:fs/promises';
import { checkSnapshot, petJson, snapshotHead, SNAPSHOT_TAIL } from './store-codec.js';
import type { SnapshotContent } from './store-codec.js';
import { fsyncDir, unlinkIfPresent, writeAll } from './store-disk.js';
import type { IoHook, StorePaths } from './store-disk.js';
import { describeError, errorCode, StoreOpenError } from './store-errors.js';
import type { IndexView } from './store-index.js';
import type { Logger, Pet } from './types.js';

/**
 * Pets serialized per write. About 0.5 MB and a few ms of work: the event loop gets control
 * back between chunks, so requests keep flowing while a large snapshot is written.
 */
const PETS_PER_CHUNK = 8192;

export interface LoadedSnapshot extends SnapshotContent {
  /** Size of the file in bytes (0 when there is none). */
  bytes: number;
}

/**
 * Reads and checks the snapshot. A missing file is an empty store; anything unreadable or
 * malformed is a StoreOpenError, and the file is left exactly as it is.
 *
 * One readFileSync + one JSON.parse is the fastest way in (see the benchmark). It bounds the
 * snapshot to V8's largest string, 2^29 - 24 characters: about 7 million pets.
 */
export function readSnapshot(paths: StorePaths): LoadedSnapshot {
  let text: string;
  try {
    text = readFileSync(paths.snapshot, 'utf8');
  } catch (err) {
    if (errorCode(err) === 'ENOENT') return { nextId: 1, pets: [], bytes: 0 };
    throw new StoreOpenError(paths.given, `Cannot read data file ${paths.given}: ${describeError(err)}.`, { cause: err });
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new StoreOpenError(
      paths.given,
      `Data file ${paths.given} is not valid JSON (${describeError(err)}); refusing to start so that it is not overwritten.`,
      { cause: err },
    );
  }
  const content = checkSnapshot(doc);
  if (typeof content === 'string') {
    throw new StoreOpenError(
      paths.given,
      `Data file ${paths.given} is not a petstore snapshot: it ${content}; refusing to start so that it is not overwritten.`,
    );
  }
  return { ...content, bytes: Buffer.byteLength(text) };
}

/**
 * Writes the first view.count pets as the new snapshot and returns its size in bytes. Pets
 * are immutable and the view's array only grows, so it can be read across awaits.
 */
export async function writeSnapshot(paths: StorePaths, view: IndexView, beforeIo: IoHook, logger: Logger): Promise<number> {
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
      await emit(chunkText(view.pets, start, Math.min(view.count, start + PETS_PER_CHUNK)));
    }
    await emit(SNAPSHOT_TAIL);
    await handle.sync();
  } catch (err) {
    await closeAndDiscard(handle, paths.tmp, logger);
    throw err;
  }
  await handle.close();
  await rename(paths.tmp, paths.snapshot);
  await fsyncDir(paths.dir);
  return bytes;
}

/** Pets [start, end) as snapshot text: one per line, comma before all but the very first. */
function chunkText(pets: ReadonlyArray<Readonly<Pet>>, start: number, end: number): string {
  const parts: string[] = new Array<string>(end - start);
  for (let i = start; i < end; i++) parts[i - start] = petJson(pets[i] as Pet);
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
