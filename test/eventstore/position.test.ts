import { describe, expect, it } from 'vitest';
import { formatPosition, formatSingleNumber, singleNumberOf } from '../../src/eventstore/position.js';

/**
 * A log position as one integer (the embedded read store keeps its creation positions so,
 * src/readstore/sqlite/positions.ts): given a position, when read as one number, then that
 * number, or null for a position that is not one safe integer written twice.
 */

describe('singleNumberOf (given a position, when read as one number, then the number or null)', () => {
  it.each<[string, number | null]>([
    [formatPosition(0n), 0],
    [formatPosition(1004n), 1004],
    [formatPosition(BigInt(Number.MAX_SAFE_INTEGER)), Number.MAX_SAFE_INTEGER],
    [formatPosition(BigInt(Number.MAX_SAFE_INTEGER) + 1n), null],
    [formatPosition(10n ** 16n), null],
    [formatPosition(5n, 6n), null],
    [formatPosition(6n, 5n), null],
    ['1004', null],
    ['00000000000000001004', null],
    ['0x000000000000000001:0x000000000000000001', null],
    [` ${formatPosition(7n)}`, null],
    ['', null],
  ])('%j -> %j', (position, expected) => {
    expect(singleNumberOf(position)).toBe(expected);
  });
});

describe('formatSingleNumber (given a number, when formatted, then the position the log wrote)', () => {
  it.each<[number]>([[0], [1], [1004], [Number.MAX_SAFE_INTEGER]])('%d', (n) => {
    expect(formatSingleNumber(n)).toBe(formatPosition(BigInt(n)));
    expect(singleNumberOf(formatSingleNumber(n))).toBe(n);
  });
});
