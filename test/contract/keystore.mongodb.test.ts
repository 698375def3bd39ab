import { openMongoKeyStore } from '../../src/privacy/mongodb/index.js';
import { describeBackend, mongoBackend, mongoDatabases } from './backends.js';
import { keyStoreContract } from './keystore.contract.js';

/**
 * The KeyStore contract against a real MongoDB (MONGODB_URL, or a `mongo:7` container when Docker
 * answers; skipped with one line otherwise, see ./backends.ts), in a database of its own.
 */

const backend = await mongoBackend();

describeBackend('MongoDB key store', backend, (url) => {
  const { client, database } = mongoDatabases(url);
  let name: string | undefined;
  keyStoreContract('mongodb', () => openMongoKeyStore({ client: client(), dbName: (name ??= database()) }));
});
