import { describe, expect, it } from 'vitest';
import { todayUtc } from '../../src/schema/dates.js';

describe('todayUtc', () => {
  it('is the UTC date of the moment given, also when the moments go back and forth across midnight', () => {
    const moments = [
      '2025-03-01T23:59:59.999Z',
      '2025-03-02T00:00:00.000Z',
      '2025-03-01T12:00:00.000Z',
      '2025-03-02T23:59:59.999Z',
      '2025-03-03T00:00:00.001Z',
      '1969-12-31T23:59:59.999Z',
      '1970-01-01T00:00:00.000Z',
      '2025-03-02T05:00:00.000+08:00',
    ];
    for (const moment of moments) expect(todayUtc(new Date(moment))).toBe(new Date(moment).toISOString().slice(0, 10));
  });
});
