import { describe, expect, it } from 'vitest';
import { openMongoWebhookStore } from '../../src/webhooks/mongodb/index.js';
import { describeBackend, mongoBackend, mongoDatabases } from './backends.js';
import { at, createWebhook, samplePayload, webhookStoreContract } from './webhookstore.contract.js';

/**
 * The WebhookStore contract against a real MongoDB (MONGODB_URL, or a `mongo:7` container when
 * Docker answers; skipped with one line otherwise, see ./backends.ts), in a database of its own.
 * The store needs a replica set (transactions), which both sources provide.
 */

const backend = await mongoBackend();

describeBackend('MongoDB webhook store', backend, (url) => {
  const { client, database } = mongoDatabases(url);

  webhookStoreContract('mongodb', () => openMongoWebhookStore({ client: client(), dbName: database() }));

  describe('MongoDB specifics', () => {
    it('of competing dispatchers claiming at once, each due delivery goes to exactly one', async () => {
      const dbName = database();
      const stores = await Promise.all(Array.from({ length: 4 }, () => openMongoWebhookStore({ client: client(), dbName })));
      try {
        const hook = await createWebhook(stores[0]!);
        await stores[0]!.enqueue(Array.from({ length: 40 }, () => ({ payload: samplePayload(hook.workspaceId), webhookIds: [hook.id] })), at(1));
        const claims = await Promise.all(
          stores.map((store) => store.claimDue(at(5), at(35), 100, (id) => (id === hook.id ? 100 : 0))),
        );
        const ids = claims.flat().map((item) => item.delivery.id);
        expect(ids).toHaveLength(40);
        expect(new Set(ids).size).toBe(40);
      } finally {
        for (const store of stores) await store.close();
      }
    });

    it('of concurrent enqueues of one event (a redelivery racing the first), one delivery per webhook is stored and returned once', async () => {
      const store = await openMongoWebhookStore({ client: client(), dbName: database() });
      try {
        const hook = await createWebhook(store);
        const event = samplePayload(hook.workspaceId);
        const results = await Promise.all(Array.from({ length: 5 }, () => store.enqueue([{ payload: event, webhookIds: [hook.id] }], at(1))));
        expect(results.flat()).toHaveLength(1);
        expect(await store.deliveries(hook.id, 50)).toHaveLength(1);
      } finally {
        await store.close();
      }
    });
  });
});
