// --seed FILE: a JSON array of pets to preload, each validated like a POST body.
import { readFile } from 'node:fs/promises';
import { ApiError } from './core/errors.js';
import { parseNewPet } from './api/schemas.js';
import type { NewPet } from './core/types.js';

export async function readSeedFile(file: string): Promise<Array<NewPet & { id?: number }>> {
  let raw: unknown;
  try {
    raw = JSON.parse(await readFile(file, 'utf8'));
  } catch (err) {
    throw new Error(`cannot read seed file ${file}: ${(err as Error).message}`);
  }
  if (!Array.isArray(raw)) throw new Error(`seed file ${file} must hold a JSON array of pets`);
  return raw.map((item: unknown, i) => {
    try {
      const pet: NewPet & { id?: number } = parseNewPet(item);
      const id = (item as { id?: unknown }).id;
      if (id !== undefined) {
        if (typeof id !== 'number' || !Number.isSafeInteger(id) || id < 1) throw new ApiError('invalid_request', 'id must be a positive integer');
        pet.id = id;
      }
      return pet;
    } catch (err) {
      throw new Error(`seed file ${file}, pet [${i}]: ${(err as Error).message}`);
    }
  });
}
