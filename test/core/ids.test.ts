import { describe, expect, it } from 'vitest';
import { isUuid, newId } from '../../src/core/ids.js';

describe('newId', () => {
  it('is a UUID of version 7 with the RFC variant', () => {
    expect(newId()).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it('starts with the milliseconds it was made at', () => {
    const at = Date.UTC(2026, 10, 23, 8, 0, 0, 123);
    expect(newId(at).replace('-', '').slice(0, 12)).toBe(at.toString(16).padStart(12, '0'));
  });

  it('orders ids made in different milliseconds by time, as text', () => {
    const ids = [5, 1_000, 1_700_000_000_000, 1_700_000_000_001, 2 ** 47].map((at) => newId(at));
    expect([...ids].sort()).toEqual(ids);
  });

  it('carries the time it is given, whatever time the id before it had', () => {
    const times = [1_700_000_000_000, 1_700_000_000_000, 5, 1_700_000_000_000, 2 ** 47, 5];
    expect(times.map((at) => newId(at).replace('-', '').slice(0, 12))).toEqual(times.map((at) => at.toString(16).padStart(12, '0')));
  });

  it('differs between ids of the same millisecond', () => {
    const ids = new Set(Array.from({ length: 1_000 }, () => newId(1_700_000_000_000)));
    expect(ids.size).toBe(1_000);
  });
});

describe('isUuid', () => {
  it('accepts a UUID in any case, and its own ids', () => {
    expect(isUuid('0190c0de-7a1b-7c2d-8e3f-0123456789ab')).toBe(true);
    expect(isUuid('0190C0DE-7A1B-7C2D-8E3F-0123456789AB')).toBe(true);
    expect(isUuid(newId())).toBe(true);
  });

  it('refuses anything else', () => {
    for (const value of ['', '0190c0de-7a1b-7c2d-8e3f-0123456789a', '0190c0de7a1b7c2d8e3f0123456789ab', '0190c0de-7a1b-7c2d-8e3f-0123456789ag', ' 0190c0de-7a1b-7c2d-8e3f-0123456789ab', 42, null, { id: 'x' }]) {
      expect(isUuid(value)).toBe(false);
    }
  });
});
