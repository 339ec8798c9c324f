// Reading a JSON file, with what went wrong told apart: the file is missing, cannot be read,
// or is not JSON. Each caller names its file and its errors in its own words (config, limiter
// state, snapshot, seed file), from one reading.
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { errorCode } from './errno.js';

export type JsonFile =
  | { readonly kind: 'ok'; readonly value: unknown; readonly text: string }
  | { readonly kind: 'missing'; readonly error: Error }
  | { readonly kind: 'unreadable'; readonly error: Error }
  | { readonly kind: 'invalid'; readonly error: Error; readonly text: string };

export async function readJsonFile(path: string): Promise<JsonFile> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    return notRead(err);
  }
  return parsed(text);
}

export function readJsonFileSync(path: string): JsonFile {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
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
    return { kind: 'invalid', error: err instanceof Error ? err : new Error(String(err)), text };
  }
}
