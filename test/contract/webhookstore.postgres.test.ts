import { describe, expect, it } from 'vitest';
import { openPostgresWebhookStore } from '../../src/webhooks/postgres/index.js';
import { describeBackend } from './backends.js';
import { postgresBackend, postgresDatabases } from './postgres.js';
import { onOwnPool } from './postgresStores.js';
import { at, createWebhook, samplePayload, webhookStoreContract } from './webhookstore.contract.js';

/**
 * The WebhookStore contract against a real PostgreSQL (DATABASE_URL or the local server; skipped
 * with one line otherwise, see ./postgres.ts), plus competing dispatchers, each on a pool of its
 * own as separate processes are.
 */

const backend = await postgresBackend();

describeBackend('PostgreSQL webhook store', backend, (adminUrl) => {
  const { database } = postgresDatabases(adminUrl);

  webhookStoreContract('postgres', async () => onOwnPool(await database(), openPostgresWebhookStore));

  describe('PostgreSQL specifics', () => {
    it('of competing dispatchers claiming at once, each due delivery goes to exactly one', async () => {
      const url = await database();
      const stores = await Promise.all(Array.from({ length: 4 }, () => onOwnPool(url, openPostgresWebhookStore)));
      try {
        const hook = await createWebhook(stores[0]!);
        await stores[0]!.enqueue(Array.from({ length: 40 }, () => ({ payload: samplePayload(hook.workspaceId), webhookIds: [hook.id] })), at(1));
        // Small batches, many rounds: the claims overlap in time while rows are still due.
        const taken: number[] = [];
        for (let round = 0; round < 10 && taken.length < 40; round++) {
          const claims = await Promise.all(stores.map((store) => store.claimDue(at(5), at(35), 3, (id) => (id === hook.id ? 3 : 0))));
          taken.push(...claims.flat().map((item) => item.delivery.id));
        }
        expect(taken).toHaveLength(40);
        expect(new Set(taken).size).toBe(40);
        // Claimed by the dispatchers, none is due again before the lease lapses; all are after it.
        expect(await stores[1]!.claimDue(at(34), at(64), 100, () => 100)).toEqual([]);
        expect(await stores[2]!.claimDue(at(35), at(65), 100, () => 100)).toHaveLength(40);
      } finally {
        for (const store of stores) await store.close();
      }
    });

    it('of concurrent enqueues of one event by two processes, one delivery per webhook is stored and returned once', async () => {
      const url = await database();
      const [a, b] = [await onOwnPool(url, openPostgresWebhookStore), await onOwnPool(url, openPostgresWebhookStore)];
      try {
        const hook = await createWebhook(a);
        const event = samplePayload(hook.workspaceId);
        const results = await Promise.all(Array.from({ length: 6 }, (_, i) => (i % 2 ? a : b).enqueue([{ payload: event, webhookIds: [hook.id] }], at(1))));
        expect(results.flat()).toHaveLength(1);
        expect(await a.deliveries(hook.id, 50)).toHaveLength(1);
      } finally {
        await a.close();
        await b.close();
      }
    });
  });
});
