import type Database from 'better-sqlite3';
import { REBUILD_SUPERSEDED } from '../port.js';
import { generationSchema, openConnection, type Tables } from './connection.js';
import { filterRowsSql, registerKeysFunction } from './bulkLoad.js';
import { inChunks, pause } from './chunks.js';

/**
 * The end of a bulk load (bulkLoad.ts) before a promotion, in steps that each hold the write lock
 * of the file briefly: a `csr projections rebuild` runs beside a server whose projector must get
 * that lock within its busy timeout, and one transaction doing everything held it for the whole
 * step.
 *
 * The costly part (every document's filter keys, computed and sorted) needs no write lock: a
 * connection of its own reads the generation in a snapshot (WAL readers block no writer) into a
 * temporary table, in key order. Only the copy into the generation's tables is locked, in chunks
 * (chunks.ts) between which other processes' writers get the lock. The copy appends at the right
 * edge of the B-tree, as one sorted insert did. Nothing else writes a generation being built, so
 * the snapshot stays true while the chunks go in.
 *
 * The first secondary index created ends the loading state (`isBulkLoading`), so the indexes come
 * last, one per step; a promotion creates any that a stop between them left out.
 */

/**
 * The process's queue of write transactions: a step runs after those queued before it (the
 * server's own projector, when the server rebuilds), never inside one of them.
 */
export type WriteQueue = <T>(work: () => Promise<T>) => Promise<T>;

interface Steps {
  /** `work` in a write transaction of its own, still building this generation. */
  locked<T>(work: () => T): Promise<T>;
  /** `work` without a write transaction (it reads a snapshot and writes temporary tables). */
  queued<T>(work: () => T): Promise<T>;
}

export async function finishBulkLoadInSteps(path: string, t: Tables, queue: WriteQueue): Promise<void> {
  // Its temporary tables go with it when it closes: nothing to drop (and zero) afterwards.
  const own = openConnection(path, { readonly: false });
  const building = own.prepare('SELECT building FROM read_model WHERE id = 1').pluck();
  const steps: Steps = {
    locked: (work) =>
      queue(async () =>
        own.transaction(() => {
          if (building.get() !== t.generation) throw new Error(REBUILD_SUPERSEDED);
          return work();
        }).immediate(),
      ),
    queued: (work) => queue(async () => work()),
  };
  try {
    // The sorter may use a second thread.
    own.pragma('threads = 2');
    registerKeysFunction(own);
    // Filter rows of a finishing step that was stopped halfway (rare: only after a kill in it).
    await steps.locked(() => own.exec(`DELETE FROM ${t.filters}; DELETE FROM ${t.filterCounts};`));
    await steps.queued(() => own.exec(`CREATE TEMP TABLE bulk_filters AS ${filterRowsSql(t)}`));
    await copyInChunks(own, steps, 'bulk_filters', `INSERT INTO ${t.filters} (coll, field, key, created_position, doc_id) SELECT coll, field, key, created_position, doc_id`);
    // Grouped from the copied rows, in their key order (no sort), outside the lock; keys of one row
    // get no count (documentWriter.ts, writeCounts).
    await steps.queued(() => own.exec(`CREATE TEMP TABLE bulk_counts AS SELECT coll, field, key, count(*) AS n FROM main.${t.filters} GROUP BY coll, field, key HAVING n >= 2`));
    await copyInChunks(own, steps, 'bulk_counts', `INSERT INTO ${t.filterCounts} (coll, field, key, n) SELECT coll, field, key, n`);
    await steps.locked(() => own.exec(`UPDATE ${t.collections} SET documents = (SELECT count(*) FROM ${t.documents} d WHERE d.coll = ${t.collections}.coll)`));
    for (const index of indexStatements(t)) {
      await pause();
      await steps.locked(() => own.exec(index));
    }
  } finally {
    own.close();
  }
}

/** `insert` followed by `FROM temp.<table>` rows in rowid (= key) order, a chunk per lock. */
async function copyInChunks(own: Database.Database, steps: Steps, table: string, insert: string): Promise<void> {
  const last = (own.prepare(`SELECT coalesce(max(rowid), 0) AS last FROM temp.${table}`).get() as { last: number }).last;
  const copy = own.prepare(`${insert} FROM temp.${table} WHERE rowid > ? AND rowid <= ? ORDER BY rowid`);
  let after = 0;
  await inChunks(steps.locked, (rows) => {
    copy.run(after, after + rows);
    after += rows;
    return after < last;
  });
}

/** The generation's CREATE INDEX statements, one by one. */
function indexStatements(t: Tables): string[] {
  return generationSchema(t)
    .split(';')
    .filter((statement) => /^\s*CREATE\s+(UNIQUE\s+)?INDEX/i.test(statement));
}
