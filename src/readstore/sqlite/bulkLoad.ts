import type Database from 'better-sqlite3';
import type { Values } from '../port.js';
import { generationSchema, type Tables } from './connection.js';
import { keysOf } from './documentWriter.js';

/**
 * The bulk load of a generation a rebuild builds (blue/green): its tables are made without their
 * secondary indexes, and its documents are written without filter rows or counts. Maintaining
 * those row by row was most of a rebuild's time: every document insert also inserted into three
 * indexes and several filter rows, each at a random place of its B-tree. They are built once,
 * before the generation is promoted: filter rows computed from the documents and inserted in key
 * order, the counts grouped from them, the indexes created over full tables (bulkFinish.ts, in
 * steps that each hold the write lock briefly; `finishBulkLoad` in one transaction).
 *
 * The state is the schema itself: a generation none of whose declared indexes exists yet is still
 * loading. It commits with the transaction that changes it, so a rebuild killed at any
 * moment resumes in the state it left (and one begun before this existed resumes row by row).
 */

/** The generation's tables without the secondary indexes (`generationSchema` adds them later). */
export function bulkSchema(t: Tables): string {
  return generationSchema(t)
    .split(';')
    .filter((statement) => !/^\s*CREATE\s+(UNIQUE\s+)?INDEX/i.test(statement))
    .join(';');
}

/** The secondary indexes `generationSchema` declares for the generation's tables. */
function declaredIndexes(t: Tables): string[] {
  return [...generationSchema(t).matchAll(/CREATE\s+(?:UNIQUE\s+)?INDEX\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)/gi)].map((match) => match[1]!);
}

/** True while none of the generation's declared indexes exists yet (a generation with none declared is never loading). */
export function isBulkLoading(write: Database.Database, t: Tables): boolean {
  const declared = declaredIndexes(t);
  if (declared.length === 0) return false;
  const found = write.prepare("SELECT 1 FROM sqlite_master WHERE type = 'index' AND name IN (SELECT value FROM json_each(?)) LIMIT 1").get(JSON.stringify(declared));
  return found === undefined;
}

/** The filter keys of a document's stored JSON, as rows (field, key): a table-valued function for `finishBulkLoad`. */
const KEYS_FUNCTION = 'bulk_filter_keys';
const withKeysFunction = new WeakSet<Database.Database>();

export function registerKeysFunction(write: Database.Database): void {
  if (withKeysFunction.has(write)) return;
  write.table(KEYS_FUNCTION, {
    columns: ['field', 'key'],
    parameters: ['fields', 'calculated'],
    *rows(fields: unknown, calculated: unknown) {
      for (const fieldKey of keysOf(JSON.parse(fields as string) as Values, JSON.parse(calculated as string) as Values)) {
        const at = fieldKey.indexOf('\u0000');
        yield [fieldKey.slice(0, at), fieldKey.slice(at + 1)];
      }
    },
  });
  withKeysFunction.add(write);
}

/** Every document's filter rows (coll, field, key, created_position, doc_id), in key order. */
export function filterRowsSql(t: Tables): string {
  return `SELECT d.coll AS coll, k.field AS field, k.key AS key, d.created_position AS created_position, d.doc_id AS doc_id
    FROM ${t.documents} d, ${KEYS_FUNCTION}(d.fields, d.calculated) k ORDER BY 1, 2, 3, 4, 5`;
}

/**
 * Filter rows, counts and indexes of a bulk-loaded generation in the caller's write transaction:
 * for a projection that finds documents by value while the generation loads. A promotion finishes
 * in short steps instead (bulkFinish.ts).
 */
export function finishBulkLoad(write: Database.Database, t: Tables): void {
  registerKeysFunction(write);
  // Rows of a stepwise finish that was stopped halfway are made again. One statement: SQLite
  // sorts the rows, then appends them at the right edge of the B-tree instead of inserting each
  // at a random place.
  write.exec(`
    DELETE FROM ${t.filters};
    INSERT INTO ${t.filters} (coll, field, key, created_position, doc_id) ${filterRowsSql(t)};
    DELETE FROM ${t.filterCounts};
    INSERT INTO ${t.filterCounts} (coll, field, key, n) SELECT coll, field, key, count(*) FROM ${t.filters} GROUP BY coll, field, key HAVING count(*) >= 2;
    UPDATE ${t.collections} SET documents = (SELECT count(*) FROM ${t.documents} d WHERE d.coll = ${t.collections}.coll);
  `);
  write.exec(generationSchema(t));
}
