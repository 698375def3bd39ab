import type { BuildingGeneration, Generations } from '../port.js';
import { RECORDS } from './mapping.js';

/**
 * Generations of the MongoDB read model (blue/green rebuilds), as pure mapping: generation 1 is the
 * `records` collection, generation N the `records_gN` one, and one pointer document in
 * `read_model` says which is live and which a rebuild is filling. Reads and projection
 * transactions look the pointer up first, so a promotion (one update of the pointer, in the
 * transaction that catches the new generation up) switches every node at once.
 */

export const READ_MODEL = 'read_model';
export const POINTER_ID = 'records';
/** One document per projection runner (and rebuild): what `csr projections status` shows of it. */
export const RUNNER_STATUS = 'runner_status';

export interface MongoPointer {
  _id: string;
  live: number;
  liveVersion: string | null;
  building: number | null;
  buildingVersion: string | null;
  buildingPosition: string | null;
  buildingOwner: string | null;
  buildingStartedAt: string | null;
}

export function recordsCollection(generation: number): string {
  return generation === 1 ? RECORDS : `${RECORDS}_g${generation}`;
}

/** The generation a collection name holds, or null for any other collection. */
export function generationOfCollection(name: string): number | null {
  if (name === RECORDS) return 1;
  const match = /^records_g([1-9]\d*)$/.exec(name);
  return match ? Number(match[1]) : null;
}

export function fromPointer(pointer: MongoPointer | null): Generations {
  if (!pointer) return { live: 1, liveVersion: null, building: null };
  const building: BuildingGeneration | null =
    pointer.building === null
      ? null
      : {
          generation: pointer.building,
          version: pointer.buildingVersion ?? '',
          position: pointer.buildingPosition,
          owner: pointer.buildingOwner ?? '',
          startedAt: pointer.buildingStartedAt ?? '',
        };
  return { live: pointer.live, liveVersion: pointer.liveVersion, building };
}

/** The pointer once `building` has become live. */
export function promoted(pointer: MongoPointer): MongoPointer {
  return {
    _id: pointer._id,
    live: pointer.building ?? pointer.live,
    liveVersion: pointer.building === null ? pointer.liveVersion : pointer.buildingVersion,
    building: null,
    buildingVersion: null,
    buildingPosition: null,
    buildingOwner: null,
    buildingStartedAt: null,
  };
}

/** The next generation number: above the live one, the one being built and every collection left over. */
export function nextGeneration(state: Generations, collectionNames: string[]): number {
  const existing = collectionNames.map(generationOfCollection).filter((g): g is number => g !== null);
  return Math.max(state.live, state.building?.generation ?? 0, ...existing) + 1;
}

/** Collections of generations that are neither live nor being built. */
export function unusedCollections(state: Generations, collectionNames: string[]): string[] {
  return collectionNames.filter((name) => {
    const generation = generationOfCollection(name);
    return generation !== null && generation !== state.live && generation !== state.building?.generation;
  });
}
