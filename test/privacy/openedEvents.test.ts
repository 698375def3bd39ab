import { describe, expect, it } from 'vitest';
import type { RecordedEvent } from '../../src/eventstore/port.js';
import { approximateChars, OpenedEvents } from '../../src/privacy/openedEvents.js';

const event = (id: string, note: string): RecordedEvent =>
  ({ id, type: 'RecordCreated', data: { recordId: `r-${id}`, fields: { note } }, metadata: {}, stream: `record-r-${id}`, revision: 0, position: id, created: new Date(0) }) as unknown as RecordedEvent;

describe('the events opened for subscribers', () => {
  it.each([
    // given: at most entries / characters, when: these notes are kept, then: these ids remain
    { maxEntries: 3, maxChars: 1_000_000, notes: ['a', 'b', 'c', 'd'], kept: ['2', '3', '4'] },
    { maxEntries: 100, maxChars: 25_000, notes: ['x'.repeat(5_000), 'y'.repeat(5_000), 'z'.repeat(5_000)], kept: ['2', '3'] },
    // One entry larger than the whole bound is still kept (the subscribers about to read it share it).
    { maxEntries: 100, maxChars: 1_000, notes: ['x'.repeat(5_000)], kept: ['1'] },
  ])('keeps the newest within $maxEntries entries and $maxChars characters', ({ maxEntries, maxChars, notes, kept }) => {
    const opened = new OpenedEvents(maxEntries, maxChars);
    notes.forEach((note, index) => opened.keep(String(index + 1), `r-${index + 1}`, event(String(index + 1), note), { sealed: note }));
    expect(notes.map((_, index) => String(index + 1)).filter((id) => opened.get(id) !== undefined)).toEqual(kept);
  });

  it('counts what it holds down again when entries leave or their record is erased', () => {
    const opened = new OpenedEvents();
    opened.keep('1', 'r-1', event('1', 'x'.repeat(100)), {});
    opened.keep('2', 'r-2', event('2', 'y'.repeat(100)), {});
    const both = opened.size;
    opened.forget('r-1');
    expect(opened.get('1')).toBeUndefined();
    expect(opened.get('2')).toBeDefined();
    expect(opened.size).toBeLessThan(both);
    opened.forget('r-2');
    expect(opened.size).toBe(0);
  });

  it('sizes a value by its strings', () => {
    expect(approximateChars('abc')).toBe(3);
    expect(approximateChars({ ab: 'cde', n: 1 })).toBe(2 + 3 + 1 + 8);
    expect(approximateChars([null, 'xy'])).toBe(8 + 2);
  });
});
