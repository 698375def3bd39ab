import { filterKey } from '../filterKey.js';
import type { FindQuery, FindResult, ReadStore, ReadTransaction } from '../port.js';
import type { Position } from '../../eventstore/position.js';
import { CheckpointWaiters } from './checkpointWaiters.js';
import {
  checkpointOn,
  collOn,
  DOCUMENT_COLUMNS,
  getOn,
  openConnection,
  SCHEMA,
  StatementCache,
  toDocument,
  type DocumentRow,
} from './connection.js';
import { DocumentWriter } from './documentWriter.js';
import { filterCount, findPage, type Criteria, type FindPlan } from './findPlan.js';

/**
 * The embedded read store (better-sqlite3). Read models are rebuildable from the log, so
 * synchronous=NORMAL is enough; a projection's documents and its checkpoint still commit in one
 * transaction.
 *
 * Two connections: `write` runs the (serialised) projection transactions, `read` answers
 * find/get/getMany/checkpoint. A transaction's fn is async, so API reads run between its
 * statements; on their own connection they only ever see committed batches.
 *
 * Layout: each (workspace, object) pair is a `collections` row with a small integer id (`coll`)
 * and its document count. `filters` holds the `filterKeys` of every value of `fields` and
 * `calculated`, clustered on (coll, field, key, created_position, doc_id): "field = key, in
 * creation order" is one contiguous range, its total one COUNT over it, and checking a further
 * filter for a known document is one primary-key probe. `filter_counts` keeps the number of rows
 * per (coll, field, key): the total of a one-filter list is a lookup, not a count over 100k
 * index entries, and the most selective of several filters drives the query.
 *
 * The parts live in `sqlite/`: the tables and connections (`connection`), query planning over
 * `filters` (`findPlan`), the documents and filter rows writer (`documentWriter`) and the
 * checkpoint waiters (`checkpointWaiters`).
 */

export function openSqliteReadStore(options: { path: string }): ReadStore {
  const write = openConnection(options.path, false);
  write.exec(SCHEMA);
  const read = openConnection(options.path, true);
  const writeCache = new StatementCache(write);
  const readCache = new StatementCache(read);

  const getMany = read
    .prepare(`SELECT ${DOCUMENT_COLUMNS} FROM documents d WHERE d.coll = ? AND d.id IN (SELECT value FROM json_each(?))`)
    .raw(true);
  const collectionCount = read.prepare('SELECT documents FROM collections WHERE coll = ?');
  const linkSources = read.prepare('SELECT id FROM link_edges WHERE workspace_id = ? AND target = ? AND object = ? AND field = ?').pluck();
  const addLink = write.prepare('INSERT OR IGNORE INTO link_edges (workspace_id, target, object, field, id) VALUES (?, ?, ?, ?, ?)');

  const writer = new DocumentWriter(write, writeCache);
  const upsertCheckpoint = write.prepare(
    'INSERT INTO checkpoints (projection, position) VALUES (?, ?) ON CONFLICT (projection) DO UPDATE SET position = excluded.position',
  );
  const deleteCheckpoint = write.prepare('DELETE FROM checkpoints WHERE projection = ?');
  const resetDocuments = write.transaction((projection: string) => {
    write.exec('DELETE FROM filters; DELETE FROM filter_counts; DELETE FROM documents; DELETE FROM link_edges; UPDATE collections SET documents = 0;');
    deleteCheckpoint.run(projection);
  });

  /**
   * Collection ids of the read side. Collections are never deleted, so an id seen committed
   * stays valid for good (also when another process writes the file).
   */
  const readColls = new Map<string, number>();
  function readColl(workspaceId: string, object: string): number | null {
    const name = `${workspaceId}\u0000${object}`;
    const known = readColls.get(name);
    if (known !== undefined) return known;
    const coll = collOn(readCache, workspaceId, object);
    if (coll !== null) readColls.set(name, coll);
    return coll;
  }

  /** Kept counts where they answer the query alone, else a COUNT over the plan's driving range. */
  function total(coll: number, query: FindQuery, plan: FindPlan): number {
    if (query.name === undefined && query.updatedSince === undefined) {
      if (query.filters.length === 0) return (collectionCount.get(coll) as { documents: number }).documents;
      if (query.filters.length === 1) return filterCount(readCache, coll, query.filters[0]!.field, filterKey(query.filters[0]!.value));
    }
    const count = readCache.get(`SELECT COUNT(*) AS total FROM ${plan.from} WHERE ${plan.where}`);
    return (count.get(...plan.params) as { total: number }).total;
  }

  /**
   * A page that is not full and not empty ends the matches, so it tells the total without a
   * count (one lookup less per upsert matched by name; an empty page says so only at offset 0).
   */
  function pageTells(query: FindQuery, found: number): number | null {
    if (found >= query.limit || (found === 0 && query.offset > 0)) return null;
    return query.offset + found;
  }

  const waiters = new CheckpointWaiters(options.path, (projection) => checkpointOn(readCache, projection));

  // --- transactions -------------------------------------------------------------------------
  let queue: Promise<unknown> = Promise.resolve();
  let closed = false;

  /** One write connection: transactions (and reset) run one after the other. */
  function enqueue<T>(work: () => Promise<T>): Promise<T> {
    if (closed) return Promise.reject(new Error('the read store is closed'));
    const result = queue.then(work);
    queue = result.catch(() => undefined);
    return result;
  }

  async function runTransaction<T>(fn: (tx: ReadTransaction) => Promise<T>): Promise<T> {
    const checkpoints = new Map<string, Position>();
    let open = true;
    const live = () => {
      if (!open) throw new Error('this read transaction has already ended');
    };
    const tx: ReadTransaction = {
      get: async (workspaceId, object, id) => {
        live();
        return getOn(writeCache, writer.coll(workspaceId, object, false), workspaceId, object, id);
      },
      findAll: async (workspaceId, object, filters) => {
        live();
        const coll = writer.coll(workspaceId, object, false);
        if (coll === null) return [];
        writer.writeCounts();
        return findPage(writeCache, coll, workspaceId, object, { filters }, -1, 0).documents;
      },
      put: async (document) => {
        live();
        writer.put(document);
      },
      addLinks: async (edges) => {
        live();
        for (const edge of edges) addLink.run(edge.workspaceId, edge.target, edge.object, edge.field, edge.id);
      },
      delete: async (workspaceId, object, id) => {
        live();
        writer.remove(workspaceId, object, id);
      },
      checkpoint: async (projection) => {
        live();
        return checkpointOn(writeCache, projection);
      },
      setCheckpoint: async (projection, position) => {
        live();
        upsertCheckpoint.run(projection, position);
        checkpoints.set(projection, position);
      },
    };
    write.exec('BEGIN IMMEDIATE');
    let result: T;
    try {
      result = await fn(tx);
      open = false;
      writer.writeCounts();
      write.exec('COMMIT');
    } catch (error) {
      open = false;
      writer.rolledBack();
      if (write.inTransaction) write.exec('ROLLBACK');
      throw error;
    }
    writer.committed();
    for (const [projection, position] of checkpoints) waiters.committed(projection, position);
    return result;
  }

  /** One read transaction: the page and the total come from the same snapshot. Made once: a transaction function costs about 10 µs to make. */
  const findInSnapshot = read.transaction((coll: number, query: FindQuery): FindResult => {
    const criteria: Criteria = { filters: query.filters, name: query.name, updatedSince: query.updatedSince };
    const { plan, documents } = findPage(readCache, coll, query.workspaceId, query.object, criteria, query.limit, query.offset);
    return { documents, total: pageTells(query, documents.length) ?? total(coll, query, plan) };
  });

  return {
    async find(query: FindQuery): Promise<FindResult> {
      const coll = readColl(query.workspaceId, query.object);
      if (coll === null) return { documents: [], total: 0 };
      return findInSnapshot(coll, query);
    },

    async get(workspaceId, object, id) {
      return getOn(readCache, readColl(workspaceId, object), workspaceId, object, id);
    },

    async getMany(workspaceId, object, ids) {
      const coll = readColl(workspaceId, object);
      if (coll === null || ids.length === 0) return [];
      const rows = getMany.all(coll, JSON.stringify(ids)) as DocumentRow[];
      return rows.map((row) => toDocument(workspaceId, object, row));
    },

    async linkSources(workspaceId, object, field, target) {
      return linkSources.all(workspaceId, target, object, field) as string[];
    },

    async checkpoint(projection) {
      return checkpointOn(readCache, projection);
    },

    waitForCheckpoint(projection, position, timeoutMs) {
      if (closed) return Promise.resolve(false);
      return waiters.waitFor(projection, position, timeoutMs);
    },

    transaction(fn) {
      return enqueue(() => runTransaction(fn));
    },

    reset(projection) {
      return enqueue(async () => {
        resetDocuments.immediate(projection);
      });
    },

    async close() {
      if (closed) return;
      const pending = queue;
      closed = true;
      await pending;
      waiters.close();
      read.close();
      write.close();
    },
  };
}
