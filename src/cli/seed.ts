// --seed FILE: a JSON array of pets to preload, each validated like a POST body.
import { parseNewPet } from '../api/index.js';
import { ApiError, readJsonFile, type NewPet } from '../core/index.js';

export async function readSeedFile(file: string): Promise<Array<NewPet & { id?: number }>> {
  const read = await readJsonFile(file);
  if (read.kind !== 'ok') throw new Error(`cannot read seed file ${file}: ${read.error.message}`);
  const raw = read.value;
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
