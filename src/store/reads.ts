// Reads shared by the in-process stores: straight from the index, the JSON text made per read
// (see pet-index.ts for why the text is not kept).
import { petJson } from './codec.js';
import type { ListQuery, StoredPet } from './contract.js';
import type { PetIndex } from './pet-index.js';
import type { Pet } from '../core/index.js';

export function storedPet(pet: Readonly<Pet>): StoredPet {
  return { pet, json: petJson(pet) };
}

export function readPet(index: PetIndex, id: number): StoredPet | undefined {
  const pet = index.get(id);
  return pet === undefined ? undefined : storedPet(pet);
}

export function readPage(index: PetIndex, q: ListQuery): StoredPet[] {
  return index.list(q.status, q.afterId, q.limit).map(storedPet);
}
