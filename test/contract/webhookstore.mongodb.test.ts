import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { openMongoWebhookStore } from '../../src/webhooks/mongodb.js';
import type { Webhook, WebhookPayload, WebhookStore } from '../../src/webhooks/port.js';
import { describeBackend, mongoBackend, mongoDatabases } from './backends.js';
import { webhookStoreContract } from './webhookstore.contract.js';

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
    const at = (second: number) => new Date(Date.UTC(2025, 0, 1, 0, 0, second)).toISOString();

    async function webhookIn(store: WebhookStore): Promise<Webhook> {
      const webhook: Webhook = {
        id: randomUUID(),
        workspaceId: randomUUID(),
        name: 'CRM sync',
        url: 'https://hooks.example.com/csr',
        events: 'all',
        objects: 'all',
        enabled: true,
        disabledReason: null,
        secret: `whsec_${randomUUID()}`,
        createdAt: at(0),
        consecutiveFailures: 0,
        lastSuccessAt: null,
      };
      await store.createWebhook(webhook);
      return webhook;
    }

    const payload = (workspaceId: string): WebhookPayload => ({
      id: randomUUID(),
      workspaceId,
      event: 'clients.created',
      object: 'clients',
      source: 'api',
      occurredAt: at(1),
      data: { id: randomUUID() },
    });

    it('of competing dispatchers claiming at once, each due delivery goes to exactly one', async () => {
      const dbName = database();
      const stores = await Promise.all(Array.from({ length: 4 }, () => openMongoWebhookStore({ client: client(), dbName })));
      try {
        const hook = await webhookIn(stores[0]!);
        await stores[0]!.enqueue(Array.from({ length: 40 }, () => ({ payload: payload(hook.workspaceId), webhookIds: [hook.id] })), at(1));
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
        const hook = await webhookIn(store);
        const event = payload(hook.workspaceId);
        const results = await Promise.all(Array.from({ length: 5 }, () => store.enqueue([{ payload: event, webhookIds: [hook.id] }], at(1))));
        expect(results.flat()).toHaveLength(1);
        expect(await store.deliveries(hook.id, 50)).toHaveLength(1);
      } finally {
        await store.close();
      }
    });
  });
});
