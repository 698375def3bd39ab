import { filterKey } from '../../schema/filterKey.js';
import type { BeginGeneration, FindQuery, FindResult, FindStoredResult, ReadStore, ReadTransaction, RunnerStatus, StoredRecord } from '../port.js';
import { REBUILD_SUPERSEDED } from '../port.js';
import type { Position } from '../../eventstore/position.js';
import { applySchema, changeSchema } from '../../sqlite/file.js';
import type Database from 'better-sqlite3';
import { CheckpointWaiters } from './checkpointWaiters.js';
import { ReadConnections } from './readConnections.js';
import {
  addRenderedColumn,
  checkpointOn,
  collOn,
  DOCUMENT_COLUMNS,
  generationSchema,
  getCheckingLive,
  getOn,
  getRenderedCheckingLive,
  getRowOn,
  openConnection,
  SCHEMA,
  StatementCache,
  tablesOf,
  toDocument,
  toStored,
  type DocumentRow,
  type Tables,
} from './connection.js';
import { bulkSchema, finishBulkLoad, isBulkLoading } from './bulkLoad.js';
import { finishBulkLoadInSteps } from './bulkFinish.js';
import { pause } from './chunks.js';
import { DocumentWriter } from './documentWriter.js';
import { BatchPipeline, batchThreadFits, NeedsOrdinaryTransaction, recordKey } from './batchPipeline.js';
import { filterCount, findPage, findStoredPage, type Criteria, type FindPlan } from './findPlan.js';
import { dropTables, tablesToDrop, ensureReadModelRow, generationsOn, generationsWithTables, isDroppedTable, liveOn } from './generations.js';

/**
 * The embedded read store (better-sqlite3). Read models are rebuildable from the log, so
 * synchronous=NORMAL is enough; a projection's documents and its checkpoint still commit in one
 * transaction.
 *
 * Connections: `write` runs the (serialised) projection transactions; reads (find/get/getMany/
 * checkpoint) take one of two read connections, the one that maps the file or the one that does
 * not, whichever costs less while commits are heard or not (`readConnections.ts`). A
 * transaction's fn is async, so API reads run between its statements; on their own connections
 * they only ever see committed batches.
 *
 * Layout: each (workspace, object) pair is a `collections` row with a small integer id (`coll`)
 * and its document count. `filters` holds the `filterKeys` of every value of `fields` and
 * `calculated`, clustered on (coll, field, key, created_position, doc_id): "field = key, in
 * creation order" is one contiguous range, its total one COUNT over it, and checking a further
 * filter for a known document is one primary-key probe. `filter_counts` keeps the number of rows
 * per (coll, field, key) of two rows or more (a key without one has at most one row): the total
 * of a one-filter list is a lookup, not a count over 100k index entries, and the most selective
 * of several filters drives the query.
 *
 * The parts live in `sqlite/`: the tables and connections (`connection`), query planning over
 * `filters` (`findPlan`), the documents and filter rows writer (`documentWriter`) and the
 * checkpoint waiters (`checkpointWaiters`), the pointer to the live generation (`generations`),
 * and how a generation keeps creation positions (`positions`).
 *
 * Generations (blue/green rebuilds): each has its own four tables (generation 1 the unsuffixed
 * ones); `read_model` says which is live. Every read looks the live one up in its own snapshot; a
 * read that raced a promotion and the drop of the old tables after it is answered again.
 */

/** `batchThread: false`: a rebuild's batches are never written on a thread of their own (batchPipeline.ts). */
export function openSqliteReadStore(options: { path: string; batchThread?: boolean }): ReadStore {
  const write = openConnection(options.path, { readonly: false });
  applySchema(write, SCHEMA);
  ensureReadModelRow(write);
  changeSchema(write, () => {
    for (const generation of generationsWithTables(write)) addRenderedColumn(write, tablesOf(generation));
  });
  const writeCache = new StatementCache(write);
  const addLink = write.prepare('INSERT OR IGNORE INTO link_edges (workspace_id, target, object, field, id) VALUES (?, ?, ?, ?, ?)');
  const writers = new Map<number, DocumentWriter>();
  function writerFor(generation: number): DocumentWriter {
    let writer = writers.get(generation);
    if (!writer) {
      writer = new DocumentWriter(write, writeCache, tablesOf(generation));
      writers.set(generation, writer);
    }
    return writer;
  }
  const upsertCheckpoint = write.prepare(
    'INSERT INTO checkpoints (projection, position) VALUES (?, ?) ON CONFLICT (projection) DO UPDATE SET position = excluded.position',
  );
  const deleteCheckpoint = write.prepare('DELETE FROM checkpoints WHERE projection = ?');
  const setBuildingPosition = write.prepare('UPDATE read_model SET building_position = ? WHERE id = 1');
  const resetDocuments = write.transaction((projection: string) => {
    const t = tablesOf(liveOn(write));
    write.exec(`DELETE FROM ${t.filters}; DELETE FROM ${t.filterCounts}; DELETE FROM ${t.documents}; DELETE FROM link_edges; UPDATE ${t.collections} SET documents = 0;`);
    deleteCheckpoint.run(projection);
  });

  /**
   * Collection ids of the read side, per generation. Collections are never deleted, so an id
   * seen committed stays valid for good (also when another process writes the file).
   */
  const readColls = new Map<string, number>();
  function readColl(readCache: StatementCache, t: Tables, workspaceId: string, object: string): number | null {
    const name = `${t.generation}\u0000${workspaceId}\u0000${object}`;
    const known = readColls.get(name);
    if (known !== undefined) return known;
    const coll = collOn(readCache, t, workspaceId, object);
    if (coll !== null) readColls.set(name, coll);
    return coll;
  }

  /** The live generation as the last read saw it (a `get` checks it in its own statement). */
  let assumedLive = 1;

  /** A read of the live generation; asked again once if a promotion dropped its tables meanwhile. */
  function onLive<T>(readCache: StatementCache, readFn: (t: Tables) => T): T {
    try {
      return readFn(tablesOf((assumedLive = liveOn(readCache))));
    } catch (error) {
      if (!isDroppedTable(error)) throw error;
      return readFn(tablesOf((assumedLive = liveOn(readCache))));
    }
  }

  /** Kept counts where they answer the query alone, else a COUNT over the plan's driving range. */
  function total(readCache: StatementCache, t: Tables, coll: number, query: FindQuery, plan: FindPlan): number {
    if (query.name === undefined && query.updatedSince === undefined) {
      if (query.filters.length === 0) {
        return (readCache.get(`SELECT documents FROM ${t.collections} WHERE coll = ?`).get(coll) as { documents: number }).documents;
      }
      if (query.filters.length === 1) return filterCount(readCache, t, coll, query.filters[0]!.field, filterKey(query.filters[0]!.value));
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

  /** What reads on one read connection: its statements and its read transactions. Made once per connection: making a transaction function costs more than most reads it runs. */
  interface Reader {
    cache: StatementCache;
    /** One read transaction: the page and the total come from the same snapshot. */
    find(query: FindQuery): FindResult;
    /** find for each query, all in one read transaction. */
    findEach(queries: readonly FindQuery[]): FindResult[];
    /** find for a reader of stored renderings; without a shape every row is read whole. */
    findStored(query: FindQuery, shape: string | null): FindStoredResult;
    linkSources: Database.Statement;
  }
  const readerOn = (read: Database.Database): Reader => {
    const readCache = new StatementCache(read);
    const findIn = (t: Tables, query: FindQuery): FindResult => {
      const coll = readColl(readCache, t, query.workspaceId, query.object);
      if (coll === null) return { documents: [], total: 0 };
      const { plan, rows } = findPage(readCache, t, coll, criteriaOf(query), query.limit, query.offset);
      return { documents: rows.map((row) => toDocument(query.workspaceId, query.object, row)), total: pageTells(query, rows.length) ?? total(readCache, t, coll, query, plan) };
    };
    return {
      cache: readCache,
      find: read.transaction((query: FindQuery): FindResult => findIn(tablesOf(liveOn(readCache)), query)),
      findEach: read.transaction((queries: readonly FindQuery[]): FindResult[] => {
        const t = tablesOf(liveOn(readCache));
        return queries.map((query) => findIn(t, query));
      }),
      findStored: read.transaction((query: FindQuery, shape: string | null): FindStoredResult => {
        const t = tablesOf(liveOn(readCache));
        const coll = readColl(readCache, t, query.workspaceId, query.object);
        if (coll === null) return { records: [], total: 0 };
        const { plan, rows } = findStoredPage(readCache, t, coll, criteriaOf(query), query.limit, query.offset, shape);
        const records = rows.map(({ id, rendered, row }): StoredRecord => ({ id, rendered, document: row === null ? null : () => toDocument(query.workspaceId, query.object, row) }));
        return { records, total: pageTells(query, rows.length) ?? total(readCache, t, coll, query, plan) };
      }),
      linkSources: read.prepare('SELECT id FROM link_edges WHERE workspace_id = ? AND target = ? AND object = ? AND field = ?').pluck(),
    };
  };
  const readers = new ReadConnections(options.path, readerOn);
  /** The statements of the read connection a read takes now. */
  const reading = (): StatementCache => readers.current().cache;

  const waiters = new CheckpointWaiters(options.path, (projection) => checkpointOn(reading(), projection));

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

  /**
   * `generation`: the one being built (its checkpoint is `building_position`); else the live one.
   * `lazy` (a rebuild's batch): the write lock is taken at the first write, not at the start. The
   * batch's reads before it are of a generation no other transaction writes, and the projection's
   * apply runs before its writes (batchOverlay.ts), so other processes' writers (a server's
   * projector) get the lock while a rebuild computes, rather than only in the instants between
   * two of its batches.
   */
  async function runTransaction<T>(fn: (tx: ReadTransaction) => Promise<T>, generation?: number, lazy = false): Promise<T> {
    const checkpoints = new Map<string, Position>();
    let writer!: DocumentWriter;
    let t!: Tables;
    let begun = false;
    const target = () => {
      const state = generationsOn(writeCache);
      if (generation !== undefined && state.building?.generation !== generation) {
        throw new Error(REBUILD_SUPERSEDED);
      }
      t = tablesOf(generation ?? state.live);
      writer = writerFor(t.generation);
      writer.bulk = generation !== undefined && isBulkLoading(write, t);
    };
    const begin = () => {
      if (begun) return;
      write.exec('BEGIN IMMEDIATE');
      try {
        target();
      } catch (error) {
        write.exec('ROLLBACK');
        throw error;
      }
      begun = true;
    };
    if (lazy) target();
    else begin();
    let open = true;
    const live = () => {
      if (!open) throw new Error('this read transaction has already ended');
    };
    const tx: ReadTransaction = {
      get: async (workspaceId, object, id) => {
        live();
        const found = getOn(writeCache, t, writer.coll(workspaceId, object, false), workspaceId, object, id);
        if (found === null) writer.lookedUpAbsent(workspaceId, object, id);
        return found;
      },
      findAll: async (workspaceId, object, filters) => {
        live();
        begin();
        const coll = writer.coll(workspaceId, object, false);
        if (coll === null) return [];
        // Finding by value needs the filter rows a bulk load has not written yet.
        if (writer.bulk) {
          finishBulkLoad(write, t);
          writer.bulk = false;
        }
        writer.writeCounts();
        return findPage(writeCache, t, coll, { filters }, -1, 0).rows.map((row) => toDocument(workspaceId, object, row));
      },
      put: async (document) => {
        live();
        begin();
        writer.put(document);
      },
      // Prepared statements in one transaction already: a loop is the bulk write here.
      putMany: async (documents) => {
        live();
        begin();
        for (const document of documents) writer.put(document);
      },
      addLinks: async (edges) => {
        live();
        begin();
        for (const edge of edges) addLink.run(edge.workspaceId, edge.target, edge.object, edge.field, edge.id);
      },
      delete: async (workspaceId, object, id) => {
        live();
        begin();
        writer.remove(workspaceId, object, id);
      },
      checkpoint: async (projection) => {
        live();
        if (generation !== undefined) return generationsOn(writeCache).building?.position ?? null;
        return checkpointOn(writeCache, projection);
      },
      setCheckpoint: async (projection, position) => {
        live();
        begin();
        if (generation !== undefined) {
          setBuildingPosition.run(position);
          return;
        }
        upsertCheckpoint.run(projection, position);
        checkpoints.set(projection, position);
      },
    };
    let result: T;
    try {
      result = await fn(tx);
      open = false;
      if (begun) {
        writer.writeCounts();
        write.exec('COMMIT');
      }
    } catch (error) {
      open = false;
      writer.rolledBack();
      if (write.inTransaction) write.exec('ROLLBACK');
      // A lazy batch reads before it locks: a restart elsewhere may have dropped its tables meanwhile.
      if (lazy && isDroppedTable(error)) throw new Error(REBUILD_SUPERSEDED);
      throw error;
    }
    writer.committed();
    for (const [projection, position] of checkpoints) waiters.committed(projection, position);
    return result;
  }

  const criteriaOf = (query: FindQuery): Criteria => ({ filters: query.filters, name: query.name, updatedSince: query.updatedSince });

  /** A read of the live generation in one snapshot; asked again once if a promotion dropped its tables meanwhile. */
  function inSnapshot<T>(read: () => T): T {
    try {
      return read();
    } catch (error) {
      if (!isDroppedTable(error)) throw error;
      return read();
    }
  }

  /** A document's row; the generation the last read found live is assumed, and checked in the row's own statement. */
  function getRow(readCache: StatementCache, workspaceId: string, object: string, id: string): DocumentRow | null {
    // A promotion since (or the drop of its tables) is read again from the pointer.
    try {
      const coll = readColl(readCache, tablesOf(assumedLive), workspaceId, object);
      const found = coll === null ? null : getCheckingLive(readCache, tablesOf(assumedLive), coll, id);
      if (found && found.live === assumedLive) return found.row;
    } catch (error) {
      if (!isDroppedTable(error)) throw error;
    }
    return onLive(readCache, (t) => getRowOn(readCache, t, readColl(readCache, t, workspaceId, object), id));
  }

  /** The generation being built catches up with the live checkpoint (`catchUp` applies the events between). */
  async function catchUpWith(tx: ReadTransaction, projection: string, catchUp: Parameters<ReadStore['promoteGeneration']>[2]): Promise<void> {
    const live = checkpointOn(writeCache, projection);
    const built = await tx.checkpoint(projection);
    if (live !== null && (built === null || built < live)) await catchUp(tx, built, live);
  }

  /** A rebuild's batches, written on a thread of their own where the machine has a second core. */
  const pipeline =
    options.batchThread !== false && batchThreadFits(options.path)
      ? new BatchPipeline(options.path, {
          committed(generation, workspaceId, object, id) {
            const t = tablesOf(generation);
            try {
              return getOn(writeCache, t, collOn(writeCache, t, workspaceId, object), workspaceId, object, id);
            } catch (error) {
              if (isDroppedTable(error)) throw new Error(REBUILD_SUPERSEDED);
              throw error;
            }
          },
          *keys(generation) {
            const t = tablesOf(generation);
            const rows = write.prepare(`SELECT c.workspace_id, c.object, d.id FROM ${t.documents} d JOIN ${t.collections} c USING (coll)`).raw();
            for (const [workspaceId, object, id] of rows.iterate() as Iterable<[string, string, string]>) yield recordKey(workspaceId, object, id);
          },
          assertBuilding(generation) {
            if (generationsOn(writeCache).building?.generation !== generation) throw new Error(REBUILD_SUPERSEDED);
          },
        })
      : null;

  /** A transaction of the generation being built: on the pipeline's thread, or ordinary if it finds by value. */
  async function generationTransaction<T>(fn: (tx: ReadTransaction) => Promise<T>, generation: number): Promise<T> {
    if (pipeline?.takes(generation)) {
      try {
        return await pipeline.transaction(generation, fn);
      } catch (error) {
        if (!(error instanceof NeedsOrdinaryTransaction)) throw error;
        await pipeline.toOrdinary(generation);
      }
    }
    return runTransaction(fn, generation, true);
  }

  function inTransaction<T>(work: () => T): Promise<T> {
    return enqueue(async () => write.transaction(work).immediate());
  }

  return {
    async find(query: FindQuery): Promise<FindResult> {
      const reader = readers.current();
      return inSnapshot(() => reader.find(query));
    },

    async findEach(queries: readonly FindQuery[]): Promise<FindResult[]> {
      const reader = readers.current();
      return inSnapshot(() => reader.findEach(queries));
    },
    async findStored(query: FindQuery, shape?: string): Promise<FindStoredResult> {
      const reader = readers.current();
      return inSnapshot(() => reader.findStored(query, shape ?? null));
    },

    async get(workspaceId, object, id) {
      const row = getRow(reading(), workspaceId, object, id);
      return row ? toDocument(workspaceId, object, row) : null;
    },

    async getStored(workspaceId, object, id) {
      const row = getRow(reading(), workspaceId, object, id);
      return row ? toStored(workspaceId, object, row) : null;
    },

    // better-sqlite3 answers synchronously: a GET of one record needs no await for its read.
    getStoredNow(workspaceId, object, id, shape) {
      const readCache = reading();
      if (shape !== undefined) {
        // The rendering alone, when it has the shape (one value read where a row is ten); else
        // the whole row, read again in a snapshot of its own.
        try {
          const coll = readColl(readCache, tablesOf(assumedLive), workspaceId, object);
          const found = coll === null ? null : getRenderedCheckingLive(readCache, tablesOf(assumedLive), coll, id);
          if (found && found.live === assumedLive) {
            if (found.rendered === null) return null;
            if (found.rendered !== undefined && found.rendered.startsWith(shape)) return { id, rendered: found.rendered, revision: found.revision!, document: null };
          }
        } catch (error) {
          if (!isDroppedTable(error)) throw error;
        }
      }
      const row = getRow(readCache, workspaceId, object, id);
      return row ? toStored(workspaceId, object, row) : null;
    },

    async getMany(workspaceId, object, ids) {
      if (ids.length === 0) return [];
      const readCache = reading();
      return onLive(readCache, (t) => {
        const coll = readColl(readCache, t, workspaceId, object);
        if (coll === null) return [];
        const sql = `SELECT ${DOCUMENT_COLUMNS} FROM ${t.documents} d WHERE d.coll = ? AND d.id IN (SELECT value FROM json_each(?))`;
        const rows = readCache.documents(sql).all(coll, JSON.stringify(ids)) as DocumentRow[];
        return rows.map((row) => toDocument(workspaceId, object, row));
      });
    },

    async linkSources(workspaceId, object, field, target) {
      return readers.current().linkSources.all(workspaceId, target, object, field) as string[];
    },

    async checkpoint(projection) {
      return checkpointOn(reading(), projection);
    },

    waitForCheckpoint(projection, position, timeoutMs) {
      if (closed) return Promise.resolve(false);
      return waiters.waitFor(projection, position, timeoutMs);
    },

    transaction(fn, options) {
      const generation = options?.generation;
      return enqueue(() => (generation === undefined ? runTransaction(fn) : generationTransaction(fn, generation)));
    },

    async generations() {
      return generationsOn(reading());
    },

    async beginGeneration(begin: BeginGeneration) {
      await pipeline?.settled();
      return inTransaction(() => {
        const state = generationsOn(writeCache);
        const building = state.building;
        if (building && !begin.restart && building.version === begin.version) {
          if (building.owner !== begin.owner && begin.ownerAlive(building.owner)) {
            throw new Error(`a rebuild of the read model is already running (${building.owner}); wait for it, or stop it first`);
          }
          write.prepare('UPDATE read_model SET building_owner = ? WHERE id = 1').run(begin.owner);
          return { ...building, owner: begin.owner, resumed: true };
        }
        if (building) {
          if (building.owner !== begin.owner && begin.ownerAlive(building.owner)) {
            throw new Error(`a rebuild of the read model is already running (${building.owner}); wait for it, or stop it first`);
          }
          dropTables(write, tablesOf(building.generation));
          writers.delete(building.generation);
        }
        const generation = Math.max(state.live, building?.generation ?? 0, ...generationsWithTables(write)) + 1;
        write.exec(bulkSchema(tablesOf(generation)));
        const startedAt = new Date().toISOString();
        write
          .prepare(
            'UPDATE read_model SET building = ?, building_version = ?, building_position = NULL, building_owner = ?, building_started_at = ? WHERE id = 1',
          )
          .run(generation, begin.version, begin.owner, startedAt);
        return { generation, version: begin.version, position: null, owner: begin.owner, startedAt, resumed: false };
      });
    },

    async promoteGeneration(generation, projection, catchUp) {
      // The batches still on the pipeline's thread commit first (or fail the promotion).
      await pipeline?.settled();
      const t = tablesOf(generation);
      // The bulk load is finished in short transactions of its own, so that writers (this
      // process's live projector, another process's) commit between them; the switch then
      // catches up with what they did.
      const loading = await enqueue(async () => generationsOn(writeCache).building?.generation === generation && isBulkLoading(write, t));
      if (loading) await finishBulkLoadInSteps(options.path, t, enqueue);
      // What the live projector committed meanwhile, applied before the switch, in a batch that
      // takes the lock at its first write: the switch then holds it for the last few events only.
      await enqueue(() => runTransaction((tx) => catchUpWith(tx, projection, catchUp), generation, true));
      return enqueue(() =>
        runTransaction(async (tx) => {
          // Indexes a stop between the finishing steps left out.
          write.exec(generationSchema(t));
          await catchUpWith(tx, projection, catchUp);
          const final = await tx.checkpoint(projection);
          write
            .prepare(
              'UPDATE read_model SET live = building, live_version = building_version, building = NULL, building_version = NULL, building_position = NULL, building_owner = NULL, building_started_at = NULL WHERE id = 1',
            )
            .run();
          if (final !== null) upsertCheckpoint.run(projection, final);
          waiters.forget();
        }, generation),
      );
    },

    async dropUnusedGenerations() {
      await pipeline?.settled();
      const unused = (state: ReturnType<typeof generationsOn>, generation: number) => generation !== state.live && generation !== state.building?.generation;
      const generations = await inTransaction(() => {
        const state = generationsOn(writeCache);
        return generationsWithTables(write).filter((generation) => unused(state, generation));
      });
      // A table per transaction, with a pause between: a drop zeroes the table's pages
      // (secure_delete, docs/privacy.md), and writers elsewhere wait for one table's drop at most.
      // Emptying a table in chunks first would bound that too, but costs about five times the drop.
      for (const generation of generations) {
        for (const table of tablesToDrop(tablesOf(generation))) {
          await pause();
          await inTransaction(() => {
            if (unused(generationsOn(writeCache), generation)) write.exec(`DROP TABLE IF EXISTS ${table}`);
          });
        }
        writers.delete(generation);
      }
      return generations.length;
    },

    async saveRunnerStatus(status) {
      await inTransaction(() =>
        write
          .prepare('INSERT INTO runner_status (name, status) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET status = excluded.status')
          .run(status.name, JSON.stringify(status)),
      );
    },

    async runnerStatuses() {
      const rows = reading().get('SELECT status FROM runner_status ORDER BY name').all() as { status: string }[];
      return rows.map((row) => JSON.parse(row.status) as RunnerStatus);
    },

    async setLiveVersion(version) {
      await inTransaction(() => write.prepare('UPDATE read_model SET live_version = ? WHERE id = 1').run(version));
    },

    reset(projection) {
      return enqueue(async () => {
        resetDocuments.immediate(projection);
        waiters.forget();
      });
    },

    async close() {
      if (closed) return;
      const pending = queue;
      closed = true;
      await pending;
      await pipeline?.close();
      waiters.close();
      readers.close();
      write.close();
    },
  };
}
