import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';

/**
 * Opens an embedded store file the way every embedded adapter needs it: WAL (readers never block
 * the writer, and the `csr` tool can work while the server runs) and a busy timeout for the
 * moments two processes write at once. `FULL` fsyncs every commit: what cannot be rebuilt from
 * the log must survive a power cut.
 */
export function openSqliteFile(path: string, synchronous: 'FULL' | 'NORMAL'): Database.Database {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path);
  db.pragma('busy_timeout = 5000');
  db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${synchronous}`);
  db.pragma('foreign_keys = ON');
  return db;
}

/**
 * A bound LIMIT or OFFSET. Written as a bare `LIMIT ?`, every run of the statement cost about 10 µs
 * more (measured on an index lookup of 5 µs, as if SQLite re-planned for each bound value); behind a
 * CAST the value is an opaque expression and the plan is reused.
 */
export const BOUND_COUNT = 'CAST(? AS INTEGER)';
