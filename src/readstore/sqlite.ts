import Database from 'better-sqlite3';
import { ValidationFailed } from '../errors.js';
import { hasReached, type Position } from '../eventstore/position.js';
import { filterKey, filterKeys } from './filterKey.js';
import type { FieldFilter, FindQuery, FindResult, ReadStore, ReadTransaction, RecordDocument, Values } from './port.js';
import { fileSignal } from '../fileSignal.js';
import { BOUND_COUNT, openSqliteFile } from '../sqliteFile.js';

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
 */

const SCHEMA = `
CREATE TABLE IF NOT EXISTS collections (
  coll INTEGER PRIMARY KEY,
  workspace_id TEXT NOT NULL,
  object TEXT NOT NULL,
  documents INTEGER NOT NULL DEFAULT 0,
  UNIQUE (workspace_id, object)
);

CREATE TABLE IF NOT EXISTS documents (
  doc_id INTEGER PRIMARY KEY,
  coll INTEGER NOT NULL,
  id TEXT NOT NULL,
  name TEXT,
  name_key TEXT,
  fields TEXT NOT NULL,
  calculated TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  updated_ms INTEGER NOT NULL,
  created_position TEXT NOT NULL,
  revision INTEGER NOT NULL,
  UNIQUE (coll, id)
);
CREATE INDEX IF NOT EXISTS documents_by_creation ON documents (coll, created_position);
CREATE INDEX IF NOT EXISTS documents_by_update ON documents (coll, updated_ms);
CREATE INDEX IF NOT EXISTS documents_by_name ON documents (coll, name_key, created_position);

CREATE TABLE IF NOT EXISTS filters (
  coll INTEGER NOT NULL,
  field TEXT NOT NULL,
  key TEXT NOT NULL,
  created_position TEXT NOT NULL,
  doc_id INTEGER NOT NULL,
  PRIMARY KEY (coll, field, key, created_position, doc_id)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS filter_counts (
  coll INTEGER NOT NULL,
  field TEXT NOT NULL,
  key TEXT NOT NULL,
  n INTEGER NOT NULL,
  PRIMARY KEY (coll, field, key)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS checkpoints (
  projection TEXT PRIMARY KEY,
  position TEXT NOT NULL
) WITHOUT ROWID;
`;

/**
 * While somebody waits for a checkpoint, how often another process's progress is looked for: a
 * write answered by another process than the projector's (API_PROCESSES) waits for this poll.
 */
const POLL_INTERVAL_MS = 2;


/**
 * A document row as an array in DOCUMENT_COLUMNS order: its statements run in raw mode, which
 * spares better-sqlite3 building an object per row (a third of a 100-row page's query time).
 */
type DocumentRow = [
  id: string,
  name: string | null,
  fields: string,
  calculated: string,
  createdAt: string,
  updatedAt: string,
  createdPosition: string,
  revision: number,
];

interface StoredRow {
  doc_id: number;
  fields: string;
  calculated: string;
  created_position: string;
}

const DOCUMENT_COLUMNS = 'd.id, d.name, d.fields, d.calculated, d.created_at, d.updated_at, d.created_position, d.revision';

function toDocument(workspaceId: string, object: string, row: DocumentRow): RecordDocument {
  const [id, name, fields, calculated, createdAt, updatedAt, createdPosition, revision] = row;
  return {
    workspaceId,
    object,
    id,
    name,
    fields: JSON.parse(fields) as Values,
    calculated: JSON.parse(calculated) as Values,
    createdAt,
    updatedAt,
    createdPosition,
    revision,
  };
}

function epochMs(moment: string, what: string): number {
  const ms = Date.parse(moment);
  if (Number.isNaN(ms)) throw new ValidationFailed(`${what} must be an ISO 8601 date-time, got "${moment}"`);
  return ms;
}

/** "field\0key" for every filter key of a document's fields and calculated values. */
function keysOf(fields: Values, calculated: Values): Set<string> {
  const keys = new Set<string>();
  for (const values of [fields, calculated]) {
    for (const [field, value] of Object.entries(values)) {
      for (const key of filterKeys(value)) keys.add(`${field}\u0000${key}`);
    }
  }
  return keys;
}

function splitKey(fieldKey: string): [string, string] {
  const at = fieldKey.indexOf('\u0000');
  return [fieldKey.slice(0, at), fieldKey.slice(at + 1)];
}

function openConnection(path: string, readonly: boolean): Database.Database {
  // Filter rows land all over their B-tree (one per value): a larger page cache than SQLite's
  // 2 MB default keeps projection batches and list reads off the disk.
  return openSqliteFile(path, { synchronous: 'NORMAL', readonly, cacheMiB: 64 });
}

/** Statements of dynamic SQL, prepared once per shape. */
class StatementCache {
  private readonly statements = new Map<string, Database.Statement>();
  constructor(private readonly db: Database.Database) {}
  get(sql: string): Database.Statement {
    let statement = this.statements.get(sql);
    if (!statement) {
      statement = this.db.prepare(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }

  /** The statement of a query for DocumentRows (raw mode: rows as arrays). */
  documents(sql: string): Database.Statement {
    return this.get(`/* raw */ ${sql}`).raw(true);
  }
}

function filterCount(db: StatementCache, coll: number, field: string, key: string): number {
  const row = db.get('SELECT n FROM filter_counts WHERE coll = ? AND field = ? AND key = ?').get(coll, field, key) as { n: number } | undefined;
  return row ? row.n : 0;
}

const PROBE = (alias: string) =>
  `EXISTS (SELECT 1 FROM filters f WHERE f.coll = ? AND f.field = ? AND f.key = ? AND f.created_position = ${alias}.created_position AND f.doc_id = ${alias}.doc_id)`;

interface Criteria {
  filters: FieldFilter[];
  name?: string | undefined;
  updatedSince?: string | undefined;
}

/** The matching documents of one collection as SQL: `SELECT COUNT(*) FROM ${from} WHERE ${where}`. */
interface FindPlan {
  from: string;
  where: string;
  /** Alias of the table carrying doc_id and created_position. */
  alias: 'f0' | 'd';
  params: unknown[];
}

/**
 * Chooses what drives the query: the name (the most selective), else the filter with the fewest
 * rows (already in creation order), else the collection's creation order. Every other filter is
 * a primary-key probe into `filters`.
 */
function planFind(db: StatementCache, coll: number, criteria: Criteria): FindPlan {
  const params: unknown[] = [];
  const conditions: string[] = [];
  const filters = criteria.filters.map((filter) => ({ field: filter.field, key: filterKey(filter.value) }));
  let from: string;
  let alias: FindPlan['alias'];
  let probes = filters;
  const onDocument = criteria.name !== undefined || criteria.updatedSince !== undefined;
  if (criteria.name === undefined && filters.length > 0) {
    let driver = 0;
    if (filters.length > 1) {
      const sizes = filters.map((filter) => filterCount(db, coll, filter.field, filter.key));
      driver = sizes.indexOf(Math.min(...sizes));
    }
    const first = filters[driver]!;
    probes = filters.filter((_, index) => index !== driver);
    alias = 'f0';
    from = onDocument ? 'filters f0 JOIN documents d ON d.doc_id = f0.doc_id' : 'filters f0';
    conditions.push('f0.coll = ? AND f0.field = ? AND f0.key = ?');
    params.push(coll, first.field, first.key);
  } else {
    alias = 'd';
    from = 'documents d';
    conditions.push('d.coll = ?');
    params.push(coll);
    if (criteria.name !== undefined) {
      conditions.push('d.name_key = ?');
      params.push(filterKey(criteria.name));
    }
  }
  for (const probe of probes) {
    conditions.push(PROBE(alias));
    params.push(coll, probe.field, probe.key);
  }
  if (criteria.updatedSince !== undefined) {
    conditions.push('d.updated_ms > ?');
    params.push(epochMs(criteria.updatedSince, 'updatedSince'));
  }
  return { from, where: conditions.join(' AND '), alias, params };
}

/** The page: ids first (from the driving index alone), then only those documents are read. */
function pageSql(plan: FindPlan): string {
  const order = `${plan.alias}.created_position, ${plan.alias}.doc_id`;
  return (
    `SELECT ${DOCUMENT_COLUMNS} FROM (SELECT ${plan.alias}.doc_id AS doc_id, ${plan.alias}.created_position AS created_position ` +
    `FROM ${plan.from} WHERE ${plan.where} ORDER BY ${order} LIMIT ${BOUND_COUNT} OFFSET ${BOUND_COUNT}) p ` +
    'JOIN documents d ON d.doc_id = p.doc_id ORDER BY p.created_position, p.doc_id'
  );
}

function findPage(db: StatementCache, coll: number, workspaceId: string, object: string, criteria: Criteria, limit: number, offset: number) {
  const plan = planFind(db, coll, criteria);
  const rows = db.documents(pageSql(plan)).all(...plan.params, limit, offset) as DocumentRow[];
  return { plan, documents: rows.map((row) => toDocument(workspaceId, object, row)) };
}

interface Waiter {
  projection: string;
  position: Position;
  resolve(reached: boolean): void;
  timer: NodeJS.Timeout;
}

export function openSqliteReadStore(options: { path: string }): ReadStore {
  const write = openConnection(options.path, false);
  write.exec(SCHEMA);
  const read = openConnection(options.path, true);
  const writeCache = new StatementCache(write);
  const readCache = new StatementCache(read);

  const collSql = 'SELECT coll FROM collections WHERE workspace_id = ? AND object = ?';
  const getSql = `SELECT ${DOCUMENT_COLUMNS} FROM documents d WHERE d.coll = ? AND d.id = ?`;
  const checkpointSql = 'SELECT position FROM checkpoints WHERE projection = ?';

  const getMany = read
    .prepare(`SELECT ${DOCUMENT_COLUMNS} FROM documents d WHERE d.coll = ? AND d.id IN (SELECT value FROM json_each(?))`)
    .raw(true);
  const collectionCount = read.prepare('SELECT documents FROM collections WHERE coll = ?');

  const insertCollection = write.prepare('INSERT INTO collections (workspace_id, object) VALUES (?, ?) ON CONFLICT DO NOTHING');
  const countDocuments = write.prepare('UPDATE collections SET documents = documents + ? WHERE coll = ?');
  const storedRow = write.prepare('SELECT doc_id, fields, calculated, created_position FROM documents WHERE coll = ? AND id = ?');
  const insertDocument = write.prepare(`
    INSERT INTO documents (coll, id, name, name_key, fields, calculated, created_at, updated_at, updated_ms, created_position, revision)
    VALUES (@coll, @id, @name, @nameKey, @fields, @calculated, @createdAt, @updatedAt, @updatedMs, @createdPosition, @revision)`);
  const updateDocument = write.prepare(`
    UPDATE documents SET name = @name, name_key = @nameKey, fields = @fields, calculated = @calculated, created_at = @createdAt,
      updated_at = @updatedAt, updated_ms = @updatedMs, created_position = @createdPosition, revision = @revision
    WHERE doc_id = @docId`);
  const deleteDocument = write.prepare('DELETE FROM documents WHERE doc_id = ?');
  const insertFilter = write.prepare('INSERT INTO filters (coll, field, key, created_position, doc_id) VALUES (?, ?, ?, ?, ?)');
  const deleteFilter = write.prepare(
    'DELETE FROM filters WHERE coll = ? AND field = ? AND key = ? AND created_position = ? AND doc_id = ?',
  );
  const countUp = write.prepare(
    'INSERT INTO filter_counts (coll, field, key, n) VALUES (?, ?, ?, ?) ON CONFLICT DO UPDATE SET n = n + excluded.n',
  );
  const dropEmptyCount = write.prepare('DELETE FROM filter_counts WHERE coll = ? AND field = ? AND key = ? AND n <= ?');
  const countDown = write.prepare('UPDATE filter_counts SET n = n - ? WHERE coll = ? AND field = ? AND key = ?');
  const upsertCheckpoint = write.prepare(
    'INSERT INTO checkpoints (projection, position) VALUES (?, ?) ON CONFLICT (projection) DO UPDATE SET position = excluded.position',
  );
  const deleteCheckpoint = write.prepare('DELETE FROM checkpoints WHERE projection = ?');
  const resetDocuments = write.transaction((projection: string) => {
    write.exec('DELETE FROM filters; DELETE FROM filter_counts; DELETE FROM documents; UPDATE collections SET documents = 0;');
    deleteCheckpoint.run(projection);
  });

  /**
   * Collection ids of the read side. Collections are never deleted, so an id seen committed
   * stays valid for good (also when another process writes the file).
   */
  const readColls = new Map<string, number>();
  function readColl(workspaceId: string, object: string): number | null {
    const name = `${workspaceId}\u0000${object}`;
    let coll = readColls.get(name);
    if (coll === undefined) {
      const row = readCache.get(collSql).get(workspaceId, object) as { coll: number } | undefined;
      if (!row) return null;
      coll = row.coll;
      readColls.set(name, coll);
    }
    return coll;
  }

  /**
   * Collection ids of the write side, remembered only once committed: an id created in a
   * transaction that rolls back must not outlive it (see runTransaction).
   */
  const writeColls = new Map<string, number>();
  const collsOfTransaction = new Map<string, number>();
  function writeColl(workspaceId: string, object: string, create: boolean): number | null {
    const name = `${workspaceId}\u0000${object}`;
    const known = writeColls.get(name) ?? collsOfTransaction.get(name);
    if (known !== undefined) return known;
    if (create) insertCollection.run(workspaceId, object);
    const row = writeCache.get(collSql).get(workspaceId, object) as { coll: number } | undefined;
    if (!row) return null;
    collsOfTransaction.set(name, row.coll);
    return row.coll;
  }

  function getOn(cache: StatementCache, coll: number | null, workspaceId: string, object: string, id: string): RecordDocument | null {
    if (coll === null) return null;
    const row = cache.documents(getSql).get(coll, id) as DocumentRow | undefined;
    return row ? toDocument(workspaceId, object, row) : null;
  }

  function checkpointOn(cache: StatementCache, projection: string): Position | null {
    const row = cache.get(checkpointSql).get(projection) as { position: string } | undefined;
    return row ? row.position : null;
  }

  /**
   * filter_counts and collection document count changes of the open transaction, summed per
   * "coll\0field\0key" (per coll) and written by writeCounts: a batch of 500 new records then
   * updates each count once, not 500 times.
   */
  const countChanges = new Map<string, { coll: number; field: string; key: string; delta: number }>();
  const documentCountChanges = new Map<number, number>();
  function changeDocumentCount(coll: number, delta: number): void {
    documentCountChanges.set(coll, (documentCountChanges.get(coll) ?? 0) + delta);
  }
  function changeCount(coll: number, field: string, key: string, delta: number): void {
    const name = `${coll}\u0000${field}\u0000${key}`;
    const change = countChanges.get(name);
    if (change) change.delta += delta;
    else countChanges.set(name, { coll, field, key, delta });
  }

  /** Before anything reads the counts, and before COMMIT. */
  function writeCounts(): void {
    for (const { coll, field, key, delta } of countChanges.values()) {
      if (delta > 0) countUp.run(coll, field, key, delta);
      else if (delta < 0 && dropEmptyCount.run(coll, field, key, -delta).changes === 0) countDown.run(-delta, coll, field, key);
    }
    countChanges.clear();
    for (const [coll, delta] of documentCountChanges) if (delta !== 0) countDocuments.run(delta, coll);
    documentCountChanges.clear();
  }

  function removeFilters(coll: number, keys: Iterable<string>, createdPosition: string, docId: number): void {
    for (const fieldKey of keys) {
      const [field, key] = splitKey(fieldKey);
      deleteFilter.run(coll, field, key, createdPosition, docId);
      changeCount(coll, field, key, -1);
    }
  }

  function addFilters(coll: number, keys: Iterable<string>, createdPosition: string, docId: number): void {
    for (const fieldKey of keys) {
      const [field, key] = splitKey(fieldKey);
      insertFilter.run(coll, field, key, createdPosition, docId);
      changeCount(coll, field, key, 1);
    }
  }

  /** Replaces the document; only the filter rows of values that changed are rewritten. */
  function put(document: RecordDocument): void {
    const coll = writeColl(document.workspaceId, document.object, true)!;
    const row = {
      coll,
      id: document.id,
      name: document.name,
      nameKey: document.name === null ? null : filterKey(document.name),
      fields: JSON.stringify(document.fields),
      calculated: JSON.stringify(document.calculated),
      createdAt: document.createdAt,
      updatedAt: document.updatedAt,
      updatedMs: epochMs(document.updatedAt, 'updatedAt'),
      createdPosition: document.createdPosition,
      revision: document.revision,
    };
    const keys = keysOf(document.fields, document.calculated);
    const stored = storedRow.get(coll, document.id) as StoredRow | undefined;
    if (!stored) {
      const docId = Number(insertDocument.run(row).lastInsertRowid);
      addFilters(coll, keys, document.createdPosition, docId);
      changeDocumentCount(coll, 1);
      return;
    }
    updateDocument.run({ ...row, docId: stored.doc_id });
    const storedKeys = keysOf(JSON.parse(stored.fields) as Values, JSON.parse(stored.calculated) as Values);
    if (stored.created_position !== document.createdPosition) {
      removeFilters(coll, storedKeys, stored.created_position, stored.doc_id);
      addFilters(coll, keys, document.createdPosition, stored.doc_id);
      return;
    }
    removeFilters(coll, [...storedKeys].filter((key) => !keys.has(key)), stored.created_position, stored.doc_id);
    addFilters(coll, [...keys].filter((key) => !storedKeys.has(key)), stored.created_position, stored.doc_id);
  }

  function remove(workspaceId: string, object: string, id: string): void {
    const coll = writeColl(workspaceId, object, false);
    if (coll === null) return;
    const stored = storedRow.get(coll, id) as StoredRow | undefined;
    if (!stored) return;
    const storedKeys = keysOf(JSON.parse(stored.fields) as Values, JSON.parse(stored.calculated) as Values);
    removeFilters(coll, storedKeys, stored.created_position, stored.doc_id);
    deleteDocument.run(stored.doc_id);
    changeDocumentCount(coll, -1);
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

  // --- checkpoint waiters -------------------------------------------------------------------
  const waiters = new Set<Waiter>();
  let poller: NodeJS.Timeout | null = null;

  function settle(waiter: Waiter, reached: boolean): void {
    if (!waiters.delete(waiter)) return;
    clearTimeout(waiter.timer);
    waiter.resolve(reached);
    if (waiters.size === 0 && poller) {
      clearInterval(poller);
      poller = null;
    }
  }

  function wake(projection: string, checkpoint: Position | null): void {
    for (const waiter of waiters) {
      if (waiter.projection === projection && hasReached(checkpoint, waiter.position)) settle(waiter, true);
    }
  }

  /** A projector in another thread of this process says so at once... */
  const reached = fileSignal<[string, Position]>('checkpoint', options.path, ([projection, position]) => wake(projection, position));

  /** ...one in another process is seen by looking at its checkpoints. */
  function poll(): void {
    const projections = new Set([...waiters].map((waiter) => waiter.projection));
    for (const projection of projections) wake(projection, checkpointOn(readCache, projection));
  }

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
        return getOn(writeCache, writeColl(workspaceId, object, false), workspaceId, object, id);
      },
      findAll: async (workspaceId, object, filters) => {
        live();
        const coll = writeColl(workspaceId, object, false);
        if (coll === null) return [];
        writeCounts();
        return findPage(writeCache, coll, workspaceId, object, { filters }, -1, 0).documents;
      },
      put: async (document) => {
        live();
        put(document);
      },
      delete: async (workspaceId, object, id) => {
        live();
        remove(workspaceId, object, id);
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
      writeCounts();
      write.exec('COMMIT');
    } catch (error) {
      open = false;
      countChanges.clear();
      documentCountChanges.clear();
      collsOfTransaction.clear();
      if (write.inTransaction) write.exec('ROLLBACK');
      throw error;
    }
    for (const [name, coll] of collsOfTransaction) writeColls.set(name, coll);
    collsOfTransaction.clear();
    for (const [projection, position] of checkpoints) {
      wake(projection, position);
      reached.post([projection, position]);
    }
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

    async checkpoint(projection) {
      return checkpointOn(readCache, projection);
    },

    waitForCheckpoint(projection, position, timeoutMs) {
      if (closed) return Promise.resolve(false);
      if (hasReached(checkpointOn(readCache, projection), position)) return Promise.resolve(true);
      return new Promise<boolean>((resolve) => {
        const waiter: Waiter = {
          projection,
          position,
          resolve,
          timer: setTimeout(() => settle(waiter, false), Math.max(0, timeoutMs)),
        };
        waiters.add(waiter);
        if (!poller) {
          poller = setInterval(poll, POLL_INTERVAL_MS);
          poller.unref();
        }
      });
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
      for (const waiter of [...waiters]) settle(waiter, false);
      reached.close();
      read.close();
      write.close();
    },
  };
}
