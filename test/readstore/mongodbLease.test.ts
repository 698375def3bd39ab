import { describe, expect, it } from 'vitest';
import { decideLease, stillHeld, type LeaseState } from '../../src/readstore/mongodb/lease.js';

const now = new Date('2025-05-01T12:00:00.000Z');
const later = (ms: number) => new Date(now.getTime() + ms);

describe('lease decision', () => {
  it('given no lease, the asker acquires it with token 1', () => {
    expect(decideLease(null, { holderId: 'a', now, ttlMs: 6_000 })).toEqual({
      kind: 'acquire',
      holderId: 'a',
      expiresAt: later(6_000),
      token: 1,
    });
  });

  it('given the asker holds a valid lease, it is renewed with the same token', () => {
    const current: LeaseState = { holderId: 'a', expiresAt: later(2_000), token: 4 };
    expect(decideLease(current, { holderId: 'a', now, ttlMs: 6_000 })).toEqual({
      kind: 'renew',
      holderId: 'a',
      expiresAt: later(6_000),
      token: 4,
    });
  });

  it('given the asker holds an expired lease nobody took, it is renewed (same token)', () => {
    const current: LeaseState = { holderId: 'a', expiresAt: later(-1_000), token: 4 };
    expect(decideLease(current, { holderId: 'a', now, ttlMs: 6_000 })).toMatchObject({ kind: 'renew', token: 4 });
  });

  it('given another holder with a valid lease, the asker is refused and told who holds it until when', () => {
    const current: LeaseState = { holderId: 'b', expiresAt: later(1), token: 7 };
    expect(decideLease(current, { holderId: 'a', now, ttlMs: 6_000 })).toEqual({
      kind: 'refuse',
      holderId: 'b',
      expiresAt: later(1),
    });
  });

  it('given another holder whose lease expired (at or before now), the asker takes over with the next token', () => {
    for (const expiresAt of [now, later(-1), later(-60_000)]) {
      const current: LeaseState = { holderId: 'b', expiresAt, token: 7 };
      expect(decideLease(current, { holderId: 'a', now, ttlMs: 6_000 })).toEqual({
        kind: 'acquire',
        holderId: 'a',
        expiresAt: later(6_000),
        token: 8,
      });
    }
  });

  it('rejects a non-positive ttl and an empty holder id', () => {
    expect(() => decideLease(null, { holderId: 'a', now, ttlMs: 0 })).toThrow(RangeError);
    expect(() => decideLease(null, { holderId: 'a', now, ttlMs: Number.NaN })).toThrow(RangeError);
    expect(() => decideLease(null, { holderId: '', now, ttlMs: 1_000 })).toThrow(RangeError);
  });

  it('one holder at a time: a sequence of asks from two candidates', () => {
    let state: LeaseState | null = null;
    const ask = (holderId: string, at: number) => {
      const decision = decideLease(state, { holderId, now: later(at), ttlMs: 6_000 });
      if (decision.kind !== 'refuse') state = { holderId, expiresAt: decision.expiresAt, token: decision.token };
      return decision.kind;
    };
    expect(ask('a', 0)).toBe('acquire');
    expect(ask('b', 1_000)).toBe('refuse');
    expect(ask('a', 1_500)).toBe('renew');
    expect(ask('b', 7_000)).toBe('refuse'); // a renewed at 1.5 s: valid until 7.5 s
    expect(ask('b', 7_500)).toBe('acquire'); // a died: b takes over once the lease lapses
    expect(ask('a', 8_000)).toBe('refuse');
    expect(state).toMatchObject({ holderId: 'b', token: 2 });
  });
});

describe('local hold time', () => {
  it('counts from when the request was sent, so a slow answer only shortens it', () => {
    expect(stillHeld(1_000, 6_000, 6_999)).toBe(true);
    expect(stillHeld(1_000, 6_000, 7_000)).toBe(false);
  });
});
