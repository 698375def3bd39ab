import type { Pool } from './pool.js';
import { inTransaction } from './pool.js';

/**
 * Versioned schema, created and upgraded at start. Each port's adapter owns a named list of steps
 * (`component`, e.g. 'events'); a step runs once, in order, and its number is recorded in
 * `csr_schema` in the same transaction. Several processes starting at once take a transaction-level
 * advisory lock first, so one of them upgrades and the others then find the work done. A
 * transaction-level lock (not a session one) holds behind transaction-pooling proxies too.
 */

export interface Migration {
  /** Steps in order; a released step is never edited, a change is a new step at the end. */
  steps: readonly string[];
  component: string;
}

// Any fixed number: the lock only serialises schema upgrades of this service.
const SCHEMA_LOCK = 7_419_211;

export async function migrate(pool: Pool, migration: Migration): Promise<void> {
  await inTransaction(pool, async (client) => {
    await client.query('SELECT pg_advisory_xact_lock($1)', [SCHEMA_LOCK]);
    await client.query('CREATE TABLE IF NOT EXISTS csr_schema (component text PRIMARY KEY, version integer NOT NULL)');
    const found = await client.query<{ version: number }>('SELECT version FROM csr_schema WHERE component = $1', [migration.component]);
    const current = found.rows[0]?.version ?? 0;
    if (current > migration.steps.length) {
      throw new Error(`the PostgreSQL schema of ${migration.component} is newer (version ${current}) than this version of the service knows (${migration.steps.length}): run the newer version`);
    }
    for (let step = current; step < migration.steps.length; step++) await client.query(migration.steps[step]!);
    if (current < migration.steps.length) {
      await client.query(
        'INSERT INTO csr_schema (component, version) VALUES ($1, $2) ON CONFLICT (component) DO UPDATE SET version = EXCLUDED.version',
        [migration.component, migration.steps.length],
      );
    }
  });
}
