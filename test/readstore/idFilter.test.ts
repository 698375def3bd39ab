import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { IdFilter } from '../../src/readstore/sqlite/idFilter.js';

/** The Bloom filter of a generation's record keys: a "no" must be certain, a "maybe" rare for keys never added. */

const key = () => `ws\u0000clients\u0000${randomUUID()}`;

describe('IdFilter', () => {
  it('holds every key added (no false "no"), including keys that differ in one character', () => {
    const filter = new IdFilter();
    const added = Array.from({ length: 200_000 }, key);
    added.push('a', 'b', 'ab', 'ba', '', 'x\u0000y', '\ud800');
    for (const k of added) filter.add(k);
    expect(added.filter((k) => !filter.mayHold(k))).toEqual([]);
  });

  it('answers "no" for nearly every key never added', () => {
    const filter = new IdFilter();
    for (let i = 0; i < 200_000; i++) filter.add(key());
    const others = Array.from({ length: 100_000 }, key);
    expect(others.filter((k) => filter.mayHold(k)).length).toBeLessThan(100);
    expect(new IdFilter().mayHold(key())).toBe(false);
  });
});
