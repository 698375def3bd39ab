import { rmSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { bulkSchema } from '../src/readstore/sqlite/bulkLoad.js';
import { generationSchema, tablesOf } from '../src/readstore/sqlite/connection.js';
import { openSqliteFile } from '../src/sqlite/file.js';

/**
 * The floor under any rebuild of the records read model into SQLite: the rows a rebuild produced,
 * copied by SQLite alone into a new file (no event read, no projection, no JavaScript per row),
 * in key order, then the secondary indexes built over the full tables. A rebuild writes at least
 * these rows and indexes; comparing this time with the raw log read says how much of the gap to
 * the goal is the layout of the read model rather than the rebuild's machinery.
 */
export function copyFloorMs(readDbPath: string, floorDbPath: string): number {
  const db = openSqliteFile(floorDbPath, { synchronous: 'NORMAL', cacheMiB: 64 });
  try {
    db.prepare('ATTACH DATABASE ? AS src').run(readDbPath);
    const { live } = db.prepare('SELECT live FROM src.read_model WHERE id = 1').get() as { live: number };
    const from = tablesOf(live);
    const to = tablesOf(1);
    const started = performance.now();
    db.exec(bulkSchema(to));
    db.transaction(() => {
      db.exec(`INSERT INTO main.${to.collections} SELECT * FROM src.${from.collections} ORDER BY coll`);
      db.exec(`INSERT INTO main.${to.documents} SELECT * FROM src.${from.documents} ORDER BY doc_id`);
      db.exec(`INSERT INTO main.${to.filters} SELECT * FROM src.${from.filters} ORDER BY coll, field, key, created_position, doc_id`);
      db.exec(`INSERT INTO main.${to.filterCounts} SELECT * FROM src.${from.filterCounts} ORDER BY coll, field, key`);
    })();
    db.exec(generationSchema(to));
    return performance.now() - started;
  } finally {
    db.close();
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${floorDbPath}${suffix}`, { force: true });
  }
}
