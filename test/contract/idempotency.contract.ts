import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClaimOptions, IdempotencyStore, IdempotentRequest } from '../../src/idempotency/port.js';

/**
 * The IdempotencyStore port's behaviour, run against every adapter (test/contract/idempotency.*.test.ts).
 * `openTwo` gives two stores on the same data, as two API processes have.
 */
export function idempotencyStoreContract(name: string, open: () => Promise<IdempotencyStore> | IdempotencyStore): void {
  describe(`IdempotencyStore contract: ${name}`, () => {
    let store: IdempotencyStore;
    let other: IdempotencyStore;
    beforeAll(async () => {
      store = await open();
      other = await open();
    });
    afterAll(async () => {
      await store?.close();
      await other?.close();
    });

    const DAY = 24 * 3600_000;
    const t0 = new Date(Date.UTC(2025, 0, 1));
    const at = (ms: number): ClaimOptions => ({ now: new Date(t0.getTime() + ms), retainMs: DAY, leaseMs: 60_000 });
    const request = (overrides: Partial<IdempotentRequest> = {}): IdempotentRequest => ({
      workspaceId: randomUUID(),
      key: `key-${randomUUID()}`,
      fingerprint: 'f1',
      ...overrides,
    });

    it('lets the first claim run, then replays its answer to the same request', async () => {
      const first = request();
      expect(await store.claim(first, at(0))).toEqual({ kind: 'run' });
      await store.complete(first, { status: 201, body: '{"ids":["a"]}' });
      expect(await store.claim(first, at(1000))).toEqual({ kind: 'replay', answer: { status: 201, body: '{"ids":["a"]}' } });
      expect(await other.claim(first, at(DAY - 1))).toEqual({ kind: 'replay', answer: { status: 201, body: '{"ids":["a"]}' } });
    });

    it('refuses the key for another request, answered or running', async () => {
      const first = request();
      await store.claim(first, at(0));
      expect(await store.claim({ ...first, fingerprint: 'f2' }, at(1))).toEqual({ kind: 'mismatch' });
      await store.complete(first, { status: 200, body: '{}' });
      expect(await other.claim({ ...first, fingerprint: 'f2' }, at(2))).toEqual({ kind: 'mismatch' });
    });

    it('keeps keys of workspaces apart', async () => {
      const first = request();
      await store.claim(first, at(0));
      expect(await store.claim({ ...first, workspaceId: randomUUID(), fingerprint: 'f2' }, at(1))).toEqual({ kind: 'run' });
    });

    it('says running while the holder runs, and lets another take over once its lease ran out', async () => {
      const first = request();
      expect(await store.claim(first, at(0))).toEqual({ kind: 'run' });
      expect(await other.claim(first, at(59_000))).toEqual({ kind: 'running' });
      expect(await other.claim(first, at(61_000))).toEqual({ kind: 'run' });
      expect(await store.claim(first, at(62_000))).toEqual({ kind: 'running' });
    });

    it('forgets an answer after the retention, and a released key', async () => {
      const answered = request();
      await store.claim(answered, at(0));
      await store.complete(answered, { status: 201, body: '{}' });
      expect(await store.claim({ ...answered, fingerprint: 'other' }, at(DAY + 1))).toEqual({ kind: 'run' });

      const released = request();
      await store.claim(released, at(0));
      await store.release(released);
      expect(await other.claim(released, at(1))).toEqual({ kind: 'run' });
    });

    it('of concurrent claims of one free key exactly one runs', async () => {
      const first = request();
      const claims = await Promise.all(Array.from({ length: 8 }, (_, i) => (i % 2 ? store : other).claim(first, at(0))));
      expect(claims.filter((claim) => claim.kind === 'run')).toHaveLength(1);
      expect(claims.filter((claim) => claim.kind === 'running')).toHaveLength(7);
    });
  });
}
