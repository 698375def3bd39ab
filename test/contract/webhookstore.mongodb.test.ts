import { randomUUID } from 'node:crypto';
import { MongoClient } from 'mongodb';
import { afterAll, beforeAll } from 'vitest';
import { openMongoWebhookStore } from '../../src/webhooks/mongodb.js';
import { describeBackend, mongoBackend } from './backends.js';
import { webhookStoreContract } from './webhookstore.contract.js';

/**
 * The WebhookStore contract against a real MongoDB replica set (MONGODB_URL, or a `mongo:7`
 * container when Docker answers; skipped with one line otherwise, see ./backends.ts).
 */

const backend = await mongoBackend();

describeBackend('MongoDB webhook store', backend, (url) => {
  let client: MongoClient;
  const dbName = `csr_contract_${randomUUID().replaceAll('-', '')}`;

  beforeAll(async () => {
    client = new MongoClient(url);
    await client.connect();
  });

  afterAll(async () => {
    await client.db(dbName).dropDatabase();
    await client.close();
  });

  webhookStoreContract('mongodb', () => openMongoWebhookStore({ client, dbName }));
});
