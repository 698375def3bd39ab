import { describe, expect, it } from 'vitest';
import {
  fromPointer,
  generationOfCollection,
  nextGeneration,
  promoted,
  recordsCollection,
  unusedCollections,
  type MongoPointer,
} from '../../src/readstore/mongodb/generations.js';

/** The pure half of MongoDB blue/green generations: collection names, the pointer document, promotion. */

const pointer = (overrides: Partial<MongoPointer> = {}): MongoPointer => ({
  _id: 'records',
  live: 1,
  liveVersion: '1',
  building: null,
  buildingVersion: null,
  buildingPosition: null,
  buildingOwner: null,
  buildingStartedAt: null,
  ...overrides,
});

describe('MongoDB read model generations', () => {
  it.each([
    [1, 'records'],
    [2, 'records_g2'],
    [17, 'records_g17'],
  ])('generation %i lives in %s, and back', (generation, name) => {
    expect(recordsCollection(generation)).toBe(name);
    expect(generationOfCollection(name)).toBe(generation);
  });

  it.each(['checkpoints', 'read_model', 'records_g', 'records_g0', 'records_gx', 'records_g2_old', 'xrecords'])('%s is no generation', (name) => {
    expect(generationOfCollection(name)).toBeNull();
  });

  it('reads a missing pointer as generation 1 of no recorded version', () => {
    expect(fromPointer(null)).toEqual({ live: 1, liveVersion: null, building: null });
  });

  it('maps the pointer document to the port', () => {
    const building = pointer({ live: 2, building: 3, buildingVersion: '4', buildingPosition: 'p', buildingOwner: 'host:1', buildingStartedAt: 't' });
    expect(fromPointer(building)).toEqual({
      live: 2,
      liveVersion: '1',
      building: { generation: 3, version: '4', position: 'p', owner: 'host:1', startedAt: 't' },
    });
  });

  it('promotion makes the generation being built the live one, of its version, and clears the rebuild', () => {
    const building = pointer({ live: 2, building: 3, buildingVersion: '4', buildingPosition: 'p', buildingOwner: 'host:1', buildingStartedAt: 't' });
    expect(promoted(building)).toEqual(pointer({ live: 3, liveVersion: '4' }));
    expect(promoted(pointer())).toEqual(pointer());
  });

  it('numbers a new generation above every live, building and left-over one', () => {
    expect(nextGeneration({ live: 1, liveVersion: null, building: null }, ['records', 'checkpoints'])).toBe(2);
    expect(nextGeneration({ live: 2, liveVersion: null, building: null }, ['records_g2', 'records_g5'])).toBe(6);
    const state = fromPointer(pointer({ live: 2, building: 7, buildingVersion: '2' }));
    expect(nextGeneration(state, ['records_g2'])).toBe(8);
  });

  it('finds the collections to drop: generations neither live nor being built', () => {
    const state = fromPointer(pointer({ live: 3, building: 5, buildingVersion: '2' }));
    expect(unusedCollections(state, ['records', 'records_g3', 'records_g4', 'records_g5', 'checkpoints', 'read_model'])).toEqual(['records', 'records_g4']);
  });
});
