import type Database from 'better-sqlite3';
import { applySchema, openSqliteFile } from '../../sqlite/file.js';
import type { KeyStore } from '../port.js';

/**
 * Data keys in the embedded store's own file for them (`keys.db` in DATA_DIR, beside the log;
 * `csr backup` copies it with the others). Not a table of events.db: a second writer on the log's
 * file makes the log's own read-then-write transactions fail with SQLITE_BUSY_SNAPSHOT. Commits
 * are fsynced (a key cannot be rebuilt, and its events are appended only once it is durable);
 * the keys asked for in one turn of the event loop share one commit.
 */

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS data_keys (id TEXT PRIMARY KEY, wrapped BLOB NOT NULL) WITHOUT ROWID;
  CREATE TABLE IF NOT EXISTS data_key_meta (name TEXT PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID;
`;

const CHUNK = 500;

export function openSqliteKeyStore(options: { path: string }): KeyStore {
  const db: Database.Database = openSqliteFile(options.path, { synchronous: 'FULL' });
  // Deleted keys are overwritten with zeros in the file, not only unlinked from the b-tree.
  db.pragma('secure_delete = ON');
  applySchema(db, SCHEMA);
  const insert = db.prepare<[string, Buffer]>('INSERT OR IGNORE INTO data_keys (id, wrapped) VALUES (?, ?)');
  const select = db.prepare<[string], { wrapped: Buffer }>('SELECT wrapped FROM data_keys WHERE id = ?');
  const remove = db.prepare<[string]>('DELETE FROM data_keys WHERE id = ?');
  const getMeta = db.prepare<[string], { value: Buffer }>('SELECT value FROM data_key_meta WHERE name = ?');
  const setMeta = db.prepare<[string, Buffer]>('INSERT OR IGNORE INTO data_key_meta (name, value) VALUES (?, ?)');
  // Keys asked for in the same turn of the event loop (concurrent creates) commit together.
  const createAll = db.transaction((batch: { id: string; wrapped: Buffer }[]) => batch.map(({ id, wrapped }) => (insert.run(id, wrapped).changes === 1 ? wrapped : select.get(id)!.wrapped)));
  let queued: { id: string; wrapped: Buffer; resolve(kept: Buffer): void; reject(error: unknown): void }[] = [];
  const flush = () => {
    const batch = queued;
    queued = [];
    try {
      const kept = createAll.immediate(batch);
      batch.forEach((entry, i) => entry.resolve(kept[i]!));
    } catch (error) {
      for (const entry of batch) entry.reject(error);
    }
  };
  const removeAll = db.transaction((ids: readonly string[]) => ids.reduce((count, id) => count + remove.run(id).changes, 0));
  return {
    create(id, wrapped) {
      return new Promise<Buffer>((resolve, reject) => {
        if (queued.push({ id, wrapped, resolve, reject }) === 1) setImmediate(flush);
      });
    },
    async getMany(ids) {
      const found = new Map<string, Buffer>();
      for (const id of ids) {
        const row = select.get(id);
        if (row) found.set(id, row.wrapped);
      }
      return found;
    },
    async delete(ids) {
      let count = 0;
      for (let i = 0; i < ids.length; i += CHUNK) count += removeAll.immediate(ids.slice(i, i + CHUNK));
      return count;
    },
    async masterCheck() {
      return getMeta.get('master-check')?.value ?? null;
    },
    async setMasterCheck(sealed) {
      setMeta.run('master-check', sealed);
      return getMeta.get('master-check')!.value;
    },
    async close() {
      if (queued.length > 0) flush();
      db.close();
    },
  };
}
