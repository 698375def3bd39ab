import { openPostgresRateLimitStore } from '../../src/ratelimit/postgres/index.js';
import { describeBackend } from './backends.js';
import { postgresBackend, postgresDatabases } from './postgres.js';
import { onOwnPool } from './postgresStores.js';
import { rateLimitStoreContract } from './ratelimitstore.contract.js';

const backend = await postgresBackend();

describeBackend('PostgreSQL rate-limit store', backend, (adminUrl) => {
  const { database } = postgresDatabases(adminUrl);
  // One database for the suite, each store on a pool of its own: the processes (and machines) of one deployment.
  let url: Promise<string> | null = null;
  rateLimitStoreContract('postgres', async () => onOwnPool(await (url ??= database()), openPostgresRateLimitStore));
});
