import { openMongoRateLimitStore } from '../../src/ratelimit/mongodb/index.js';
import { describeBackend, mongoBackend, mongoDatabases } from './backends.js';
import { rateLimitStoreContract } from './ratelimitstore.contract.js';

/**
 * The RateLimitStore contract against a real MongoDB (MONGODB_URL, or a `mongo:7` container when
 * Docker answers; skipped with one line otherwise, see ./backends.ts). Every store of the suite
 * on one database, each on the suite's client: the processes (and machines) of one deployment.
 */

const backend = await mongoBackend();

describeBackend('MongoDB rate-limit store', backend, (url) => {
  const { client, database } = mongoDatabases(url);
  let name: string | undefined;
  rateLimitStoreContract('mongodb', () => openMongoRateLimitStore({ client: client(), dbName: (name ??= database()) }));
});
