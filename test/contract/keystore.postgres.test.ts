import { randomBytes } from 'node:crypto';
import { expect, it } from 'vitest';
import { openPostgresKeyStore } from '../../src/privacy/postgres/index.js';
import { openPool, type Pool } from '../../src/postgres/pool.js';
import { describeBackend } from './backends.js';
import { keyStoreContract } from './keystore.contract.js';
import { postgresBackend, postgresDatabases } from './postgres.js';

const backend = await postgresBackend();

describeBackend('PostgreSQL key store', backend, (adminUrl) => {
  const { database } = postgresDatabases(adminUrl);
  let url: Promise<string> | undefined;
  // Each store with a pool of its own, as two processes have; the contract's stores share one database.
  const open = async () => {
    const pool = openPool({ url: await (url ??= database()), max: 2 });
    const store = await openPostgresKeyStore({ pool });
    return { ...store, close: () => pool.end() };
  };
  keyStoreContract('postgres', open);

  it('erases for real: the row is gone, and no tuple in the table pages holds the wrapped key any more', async () => {
    const pool: Pool = openPool({ url: await database(), max: 2 });
    try {
      const store = await openPostgresKeyStore({ pool });
      const wrapped = randomBytes(48);
      await store.create('record-1', wrapped);
      await store.create('record-2', randomBytes(48));
      // The table's tuples as stored (pageinspect): a deleted row stays in its page as a dead tuple until VACUUM.
      await pool.query('CREATE EXTENSION IF NOT EXISTS pageinspect');
      const inPages = async () =>
        (
          await pool.query<{ found: boolean }>(
            "SELECT EXISTS (SELECT 1 FROM generate_series(0, pg_relation_size('csr_data_keys') / current_setting('block_size')::int - 1) AS page, heap_page_items(get_raw_page('csr_data_keys', page::int)) AS item WHERE position($1::bytea IN item.t_data) > 0) AS found",
            [wrapped],
          )
        ).rows[0]!.found;
      expect(await inPages()).toBe(true);
      expect(await store.delete(['record-1'])).toBe(1);
      expect(await store.getMany(['record-1'])).toEqual(new Map());
      expect(await inPages()).toBe(false);
    } finally {
      await pool.end();
    }
  });
});
