import { openMongoIdempotencyStore } from '../../src/idempotency/mongodb/index.js';
import { describeBackend, mongoBackend, mongoDatabases } from './backends.js';
import { idempotencyStoreContract } from './idempotency.contract.js';

/**
 * The IdempotencyStore contract against a real MongoDB (MONGODB_URL, or a `mongo:7` container when
 * Docker answers; skipped with one line otherwise, see ./backends.ts), in a database of its own.
 */

const backend = await mongoBackend();

describeBackend('MongoDB idempotency store', backend, (url) => {
  const { client, database } = mongoDatabases(url);
  let name: string | undefined;
  idempotencyStoreContract('mongodb', () => openMongoIdempotencyStore({ client: client(), dbName: (name ??= database()) }));
});
