import { describe, expect, it } from 'vitest';
import { cellsToWake } from '../../src/core/doorbells.js';

/** Bits of the cells that listen to a bell. */
const cells = (...listening: number[]) => listening.reduce((bits, cell) => bits | (1 << cell), 0);

describe('which cells of a bell a ring wakes', () => {
  it.each([
    { given: 'nobody listening', listeners: cells(), ringer: 0, woken: [] },
    { given: 'the ringer alone listening', listeners: cells(0), ringer: 0, woken: [] },
    { given: 'the API thread rings; projector and dispatcher listen too', listeners: cells(0, 1, 2), ringer: 0, woken: [1, 2] },
    { given: 'the projector rings', listeners: cells(0, 1, 2), ringer: 1, woken: [0, 2] },
    { given: 'a thread that does not listen rings', listeners: cells(0, 2), ringer: 5, woken: [0, 2] },
    { given: 'news from another process', listeners: cells(0, 1, 2), ringer: undefined, woken: [0, 1, 2] },
    { given: 'a thread on the shared cell rings: others may wait there', listeners: cells(0, 31), ringer: 31, woken: [0, 31] },
    { given: 'the highest cell among others', listeners: cells(3, 30, 31), ringer: 30, woken: [3, 31] },
  ])('$given', ({ listeners, ringer, woken }) => {
    expect(cellsToWake(listeners, ringer)).toEqual(woken);
  });
});
