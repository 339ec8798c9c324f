// The durable write, in one place: a file's bytes are fsynced before its name is published
// (rename), and the directory is fsynced after a rename or a creation, because a new name
// survives a power cut only once its directory is. The file store, its lock and the limiter
// state all write this way.
import { closeSync, constants, fsyncSync, openSync } from 'node:fs';
import { open } from 'node:fs/promises';

/** Makes the directory entries of `dir` durable (after a rename or a file creation). */
export async function fsyncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** fsyncDir, synchronously: for code that must not yield between its steps (the data lock). */
export function fsyncDirSync(dir: string): void {
  const fd = openSync(dir, constants.O_RDONLY);
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Creates `path` (it must not exist), writes `text` and fsyncs it: ready to be renamed into place. */
export async function writeNewFileSynced(path: string, text: string, mode: number): Promise<void> {
  const fh = await open(path, 'wx', mode);
  try {
    await fh.writeFile(text, 'utf8');
    await fh.sync();
  } finally {
    await fh.close();
  }
}
