import { openPostgresIdempotencyStore } from '../../src/idempotency/postgres/index.js';
import { describeBackend } from './backends.js';
import { idempotencyStoreContract } from './idempotency.contract.js';
import { postgresBackend, postgresDatabases } from './postgres.js';
import { onOwnPool } from './postgresStores.js';

/**
 * The IdempotencyStore contract against a real PostgreSQL (DATABASE_URL or the local server;
 * skipped with one line otherwise, see ./postgres.ts), in a database of its own. The contract's two
 * stores each have their own pool, as two API processes do.
 */

const backend = await postgresBackend();

describeBackend('PostgreSQL idempotency store', backend, (adminUrl) => {
  const { database } = postgresDatabases(adminUrl);
  let url: Promise<string> | undefined;
  idempotencyStoreContract('postgres', async () => onOwnPool(await (url ??= database()), openPostgresIdempotencyStore));
});
