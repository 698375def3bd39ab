import { dirname, resolve } from 'node:path';
import type Database from 'better-sqlite3';
import { Sqlite } from './driver.js';
import { makeDirectory } from '../core/makeDirectory.js';

export interface SqliteFileOptions {
  /** For writers (a read-only connection commits nothing): `FULL` fsyncs every commit, for what
   *  cannot be rebuilt from the log and must survive a power cut. */
  synchronous: 'FULL' | 'NORMAL';
  readonly?: boolean;
  /** Page cache of this connection; SQLite's default is 2 MiB. */
  cacheMiB?: number;
}

/** How long a connection waits for another process's write lock before it gives up. */
export const BUSY_TIMEOUT_MS = 5_000;

/**
 * WAL pages after which a commit copies the WAL back into the database file (SQLite's default is
 * 1,000, 4 MiB). A 1,000-record upsert writes about as many pages, so with the default every
 * such commit also ran a checkpoint: copied its pages again and fsynced the file. At 10,000
 * (at most about 40 MiB of WAL per file) a checkpoint comes every few commits and copies a page
 * written by several of them once (docs/performance.md). A server's own checkpointer thread
 * (`checkpointer.ts`) keeps its WALs far below this, so that no commit of its pays for a
 * checkpoint; this bound is for when none runs (`csr`).
 */
const WAL_CHECKPOINT_PAGES = 10_000;

/**
 * The size a WAL file is cut back to when it starts over after a complete checkpoint. SQLite
 * keeps a WAL file at the largest size it ever reached; when checkpoints could not run (a full
 * disk), each file's WAL grew by every commit, and kept that space after the checkpoints caught up,
 * space the read models then lacked until a restart deleted the files. Above the few pages between
 * two checkpoints of a server's checkpointer, so that ordinary commits never pay for the cut.
 */
const WAL_KEPT_BYTES = 4 * 1024 * 1024;

/**
 * Opens an embedded store file the way every embedded adapter needs it: WAL (readers never block
 * the writer, and the `csr` tool can work while the server runs) and a busy timeout for the
 * moments two processes write at once.
 */
export function openSqliteFile(path: string, options: SqliteFileOptions): Database.Database {
  let db: Database.Database;
  try {
    if (path !== ':memory:' && !options.readonly) makeDirectory(dirname(path));
    db = new Sqlite(path, { readonly: options.readonly ?? false, timeout: BUSY_TIMEOUT_MS });
  } catch (error) {
    // Said to the operator at start (server or csr): which file, why, and what to check.
    const reason = (error as Error).message;
    throw new Error(`cannot open the store file ${resolve(path)}: ${reason} (DATA_DIR must be a folder this user can write)`);
  }
  if (options.cacheMiB !== undefined) db.pragma(`cache_size = -${options.cacheMiB * 1024}`);
  if (!options.readonly) {
    switchToWal(db);
    db.pragma(`synchronous = ${options.synchronous}`);
    db.pragma(`wal_autocheckpoint = ${WAL_CHECKPOINT_PAGES}`);
    db.pragma(`journal_size_limit = ${WAL_KEPT_BYTES}`);
    // Deleted and overwritten content is zeroed, not left in free space: an erasure must leave
    // no byte of a personal value in the files (docs/privacy.md).
    db.pragma('secure_delete = ON');
  }
  db.pragma('foreign_keys = ON');
  return db;
}

/** SQLITE_BUSY and its extended codes: another connection holds a lock this one needs. */
export function isBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_BUSY');
}

const WAL_SWITCH_RETRY_MS = 5;

/**
 * Switching a file to WAL rewrites its header in a write transaction that begins as a read one.
 * When another connection is writing the file at that moment (the role threads of a server
 * starting on a new DATA_DIR each create the same files), SQLite refuses the upgrade at once with
 * SQLITE_BUSY instead of waiting, lest the two deadlock: 3 of 420 servers started three at a time
 * on new DATA_DIRs stopped so. A new try begins without the read lock, so it waits or succeeds;
 * it is tried again for as long as busy_timeout.
 */
function switchToWal(db: Database.Database): void {
  const deadline = Date.now() + BUSY_TIMEOUT_MS;
  for (;;) {
    try {
      db.pragma('journal_mode = WAL');
      return;
    } catch (error) {
      if (!isBusy(error) || Date.now() >= deadline) throw error;
      // Files are opened as a process or thread starts, before it serves anything: pausing holds up nothing.
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, WAL_SWITCH_RETRY_MS);
    }
  }
}

/*
 * Why bound values are written as below: better-sqlite3 clears a statement's bindings after each
 * run, and SQLite marks a statement whose plan looked at a bound value as expired when its
 * bindings are cleared, so the next run parses and plans it again (several times the cost of the
 * lookup itself). SQLite looks at the value behind a bare `?` in a LIMIT, and since 3.54 (in
 * better-sqlite3 13, so on Node.js 22.14+ and 24) at the `?` of an equality in any statement
 * with ORDER BY or a join. An expression around the `?` hides the value from the planner.
 */

/** A bound LIMIT or OFFSET. */
export const BOUND_COUNT = 'CAST(? AS INTEGER)';

/**
 * A bound value compared in the WHERE of a statement with ORDER BY or a join. Unary plus changes
 * no comparison (neither `?` nor `+?` has an affinity), and the column's index is still used.
 */
export const BOUND_VALUE = '+?';

/**
 * Copies the WAL into the database file and truncates it to nothing, so that no old page image
 * (e.g. of a value just erased) stays on disk. Retries while another connection reads.
 */
export async function truncateWal(path: string, timeoutMs = 10_000): Promise<boolean> {
  const db = openSqliteFile(path, { synchronous: 'FULL' });
  try {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const [result] = db.pragma('wal_checkpoint(TRUNCATE)') as { busy: number; log: number; checkpointed: number }[];
      if (result && result.busy === 0) return true;
      if (Date.now() > deadline) return false;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  } finally {
    db.close();
  }
}

/**
 * Creates tables and indexes (statements that are no-ops when they exist) as every embedded store
 * opens, in one write transaction taken up front, tried again while SQLITE_BUSY for as long as busy_timeout. The role
 * threads of a server starting on a new DATA_DIR create theirs in the same files at once, and a
 * plain CREATE, which begins as a read and only then asks for the write lock, was refused at once
 * with SQLITE_BUSY there (a webhook fan-out in CI). BEGIN IMMEDIATE asks for the lock first.
 */
export function applySchema(db: Database.Database, sql: string): void {
  changeSchema(db, () => db.exec(sql));
}

/**
 * Runs a store's schema work (migrations that look at the tables first, then its CREATEs) in one
 * write transaction taken up front, as applySchema does: another thread opening the same file at
 * the same moment waits, then finds the work done, instead of doing it again (an ALTER TABLE run
 * twice fails with "duplicate column name").
 */
export function changeSchema(db: Database.Database, change: () => void): void {
  const run = db.transaction(change);
  const deadline = Date.now() + BUSY_TIMEOUT_MS;
  for (;;) {
    try {
      run.immediate();
      return;
    } catch (error) {
      if (!isBusy(error) || Date.now() >= deadline) throw error;
      // Schemas are applied as a store opens, before it serves anything: pausing holds up nothing.
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, WAL_SWITCH_RETRY_MS);
    }
  }
}
