import { describe, expect, it } from 'vitest';
import { claimOf, idOf, pendingDoc } from '../../src/idempotency/mongodb/index.js';

/** The pure parts of the MongoDB idempotency adapter (its contract needs a server). */

const request = { workspaceId: 'w1', key: 'k:1', fingerprint: 'f1' };

describe('MongoDB idempotency mapping', () => {
  it('names a document by workspace and key', () => {
    expect(idOf(request)).toBe('w1:k:1');
  });

  it('writes a pending claim with its lease and its expiry', () => {
    const now = new Date(Date.UTC(2025, 0, 1));
    expect(pendingDoc(request, { now, retainMs: 86_400_000, leaseMs: 60_000 })).toEqual({
      _id: 'w1:k:1',
      fingerprint: 'f1',
      created: now,
      leaseUntil: new Date(now.getTime() + 60_000),
      expiresAt: new Date(now.getTime() + 86_400_000),
      status: null,
      body: null,
    });
  });

  it('classifies a live document of another holder', () => {
    expect(claimOf({ fingerprint: 'f2', status: 201, body: '{}' }, request)).toEqual({ kind: 'mismatch' });
    expect(claimOf({ fingerprint: 'f1', status: 201, body: '{"a":1}' }, request)).toEqual({ kind: 'replay', answer: { status: 201, body: '{"a":1}' } });
    expect(claimOf({ fingerprint: 'f1', status: null, body: null }, request)).toEqual({ kind: 'running' });
  });
});
