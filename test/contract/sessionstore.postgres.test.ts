import { openPostgresSessionStore } from '../../src/setup/postgres/sessions.js';
import { describeBackend } from './backends.js';
import { postgresBackend, postgresDatabases } from './postgres.js';
import { onOwnPool } from './postgresStores.js';
import { sessionStoreContract } from './sessionstore.contract.js';

/**
 * The SessionStore contract against a real PostgreSQL (DATABASE_URL or the local server; skipped
 * with one line otherwise, see ./postgres.ts), in a database of its own per store.
 */

const backend = await postgresBackend();

describeBackend('PostgreSQL session store', backend, (adminUrl) => {
  const { database } = postgresDatabases(adminUrl);
  sessionStoreContract('postgres', async () => onOwnPool(await database(), openPostgresSessionStore));
});
