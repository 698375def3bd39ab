import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { parseRateLimit } from '../../src/core/rateLimit.js';
import type { RateLimitStore } from '../../src/ratelimit/port.js';

/**
 * What every RateLimitStore adapter must do (src/ratelimit/port.ts): one token bucket per key,
 * refilled by the time passed, granting in batches, shared by every instance on the same storage,
 * and counting the refusals processes hand it.
 */
export function rateLimitStoreContract(name: string, open: () => RateLimitStore | Promise<RateLimitStore>): void {
  describe(`RateLimitStore contract: ${name}`, () => {
    const opened: RateLimitStore[] = [];
    const store = async () => {
      const made = await open();
      opened.push(made);
      return made;
    };
    afterAll(async () => {
      await Promise.all(opened.map((made) => made.close()));
    });
    const limit = parseRateLimit('10/s,burst=20');
    const T0 = 1_700_000_000_000;

    it('grants up to the burst, then refuses with the time until enough tokens are back', async () => {
      const s = await store();
      const keyId = randomUUID();
      expect(await s.take({ keyId, limit, wanted: 15, atLeast: 1, refused: 0, now: T0 })).toEqual({ granted: 15, left: 5, retryAfterMs: 0 });
      expect(await s.take({ keyId, limit, wanted: 10, atLeast: 1, refused: 0, now: T0 })).toEqual({ granted: 5, left: 0, retryAfterMs: 0 });
      expect(await s.take({ keyId, limit, wanted: 3, atLeast: 3, refused: 0, now: T0 })).toEqual({ granted: 0, left: 0, retryAfterMs: 300 });
      // 500 ms later: 5 tokens back.
      expect(await s.take({ keyId, limit, wanted: 10, atLeast: 1, refused: 0, now: T0 + 500 })).toMatchObject({ granted: 5, retryAfterMs: 0 });
      // Never more than the burst, however long the wait.
      expect(await s.take({ keyId, limit, wanted: 100, atLeast: 1, refused: 0, now: T0 + 3_600_000 })).toMatchObject({ granted: 20, left: 0 });
    });

    it('one bucket per key, shared by every instance on the same storage', async () => {
      const [a, b] = [await store(), await store()];
      const [one, other] = [randomUUID(), randomUUID()];
      expect(await a.take({ keyId: one, limit, wanted: 20, atLeast: 1, refused: 0, now: T0 })).toMatchObject({ granted: 20 });
      expect(await b.take({ keyId: one, limit, wanted: 1, atLeast: 1, refused: 0, now: T0 })).toMatchObject({ granted: 0 });
      expect(await b.take({ keyId: other, limit, wanted: 1, atLeast: 1, refused: 0, now: T0 })).toMatchObject({ granted: 1 });
    });

    it('counts the refusals handed to it, for the last hour or so', async () => {
      const s = await store();
      const keyId = randomUUID();
      const now = Date.now();
      await s.take({ keyId, limit, wanted: 0, atLeast: 0, refused: 3, now });
      await s.take({ keyId, limit, wanted: 1, atLeast: 1, refused: 2, now });
      const stats = await s.refusals([keyId, randomUUID()]);
      expect(stats.get(keyId)).toEqual({ recent: 5, lastAt: new Date(now).toISOString() });
      expect(stats.size).toBe(1);
    });
  });
}
