import { migrate } from '../../postgres/migrate.js';
import type { Pool } from '../../postgres/pool.js';
import type { KeyStore } from '../port.js';

/**
 * Data keys on PostgreSQL: one row per record key, and the master key check. Erasure is a real
 * DELETE, and `scrub()` then VACUUMs the table so that the space of the deleted rows is reclaimed
 * and no dead tuple in the table's pages keeps a wrapped key. What PostgreSQL cannot promise, and
 * docs/privacy.md says: the WAL and base backups keep the old pages until they roll over, and
 * VACUUM marks space free without overwriting it byte by byte. Each key is wrapped by the master
 * key, which is never stored here.
 */

const MIGRATION = {
  component: 'data_keys',
  steps: [
    `CREATE TABLE csr_data_keys (id text PRIMARY KEY, wrapped bytea NOT NULL);
     CREATE TABLE csr_data_key_meta (name text PRIMARY KEY, value bytea NOT NULL);`,
  ],
};

const CHUNK = 1_000;

export interface PostgresKeyStore extends KeyStore {
  /** Reclaims the space of deleted keys (VACUUM); `delete` runs it after it deleted any. */
  scrub(): Promise<void>;
}

export async function openPostgresKeyStore(options: { pool: Pool }): Promise<PostgresKeyStore> {
  const { pool } = options;
  await migrate(pool, MIGRATION);
  const scrub = async () => {
    await pool.query('VACUUM csr_data_keys');
  };
  return {
    async create(id, wrapped) {
      // Theirs wins a race: the insert does nothing when a key exists, and the kept one is read back.
      // Read by a statement of its own: an insert that waited on a concurrent one's row reads with
      // the snapshot it began with, where that row is not there yet (one statement found nothing).
      for (;;) {
        const inserted = await pool.query<{ wrapped: Buffer }>('INSERT INTO csr_data_keys (id, wrapped) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING RETURNING wrapped', [id, wrapped]);
        if (inserted.rows[0]) return inserted.rows[0].wrapped;
        const kept = await pool.query<{ wrapped: Buffer }>('SELECT wrapped FROM csr_data_keys WHERE id = $1', [id]);
        // Erased in between: this key is the record's new one.
        if (kept.rows[0]) return kept.rows[0].wrapped;
      }
    },
    async getMany(ids) {
      const found = new Map<string, Buffer>();
      for (let i = 0; i < ids.length; i += CHUNK) {
        const result = await pool.query<{ id: string; wrapped: Buffer }>('SELECT id, wrapped FROM csr_data_keys WHERE id = ANY($1::text[])', [ids.slice(i, i + CHUNK)]);
        for (const row of result.rows) found.set(row.id, row.wrapped);
      }
      return found;
    },
    async delete(ids) {
      let count = 0;
      for (let i = 0; i < ids.length; i += CHUNK) {
        count += (await pool.query('DELETE FROM csr_data_keys WHERE id = ANY($1::text[])', [ids.slice(i, i + CHUNK)])).rowCount ?? 0;
      }
      // The erasure is not done while a dead tuple still holds the key (VACUUM skips the pages it knows are clean).
      if (count > 0) await scrub();
      return count;
    },
    async masterCheck() {
      const result = await pool.query<{ value: Buffer }>("SELECT value FROM csr_data_key_meta WHERE name = 'master-check'");
      return result.rows[0]?.value ?? null;
    },
    async setMasterCheck(sealed) {
      // As create: two processes' first starts may race, and the winner's row is read by a statement of its own.
      const inserted = await pool.query<{ value: Buffer }>("INSERT INTO csr_data_key_meta (name, value) VALUES ('master-check', $1) ON CONFLICT (name) DO NOTHING RETURNING value", [sealed]);
      if (inserted.rows[0]) return inserted.rows[0].value;
      return (await pool.query<{ value: Buffer }>("SELECT value FROM csr_data_key_meta WHERE name = 'master-check'")).rows[0]!.value;
    },
    scrub,
    async close() {},
  };
}
