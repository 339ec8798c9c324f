// Reading a JSON file, with what went wrong told apart: the file is missing, cannot be read,
// or is not JSON. Each caller names its file and its errors in its own words (config, limiter
// state, snapshot, seed file), from one reading.
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { errorCode } from './errno.js';
import { readRegularFile, readRegularFileSync } from './regular-file.js';
import { printable } from './text.js';

export type JsonFile =
  | { readonly kind: 'ok'; readonly value: unknown; readonly text: string }
  | { readonly kind: 'missing'; readonly error: Error }
  | { readonly kind: 'unreadable'; readonly error: Error }
  | { readonly kind: 'invalid'; readonly error: Error; readonly text: string };

/**
 * With `maxBytes`, only a regular file of at most that many bytes is read (anything else is
 * 'unreadable', saying why): see regular-file.ts. Without, any file is read whole, as a seed
 * file given as `<(command)` must be.
 */
export async function readJsonFile(path: string, maxBytes?: number): Promise<JsonFile> {
  let text: string;
  try {
    text = maxBytes === undefined ? await readFile(path, 'utf8') : (await readRegularFile(path, maxBytes)).toString('utf8');
  } catch (err) {
    return notRead(err);
  }
  return parsed(text);
}

export function readJsonFileSync(path: string, maxBytes?: number): JsonFile {
  let text: string;
  try {
    text = maxBytes === undefined ? readFileSync(path, 'utf8') : readRegularFileSync(path, maxBytes).toString('utf8');
  } catch (err) {
    return notRead(err);
  }
  return parsed(text);
}

function notRead(err: unknown): JsonFile {
  const error = err instanceof Error ? err : new Error(String(err));
  return { kind: errorCode(err) === 'ENOENT' ? 'missing' : 'unreadable', error };
}

function parsed(text: string): JsonFile {
  try {
    return { kind: 'ok', value: JSON.parse(text), text };
  } catch (err) {
    // V8 quotes the text around the error: from a binary file, raw bytes for a terminal.
    return { kind: 'invalid', error: new SyntaxError(printable(err instanceof Error ? err.message : String(err))), text };
  }
}
