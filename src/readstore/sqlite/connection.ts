import type Database from 'better-sqlite3';
import { ValidationFailed } from '../../core/errors.js';
import type { Position } from '../../eventstore/position.js';
import type { RecordDocument, StoredRecord, Values } from '../port.js';
import { openSqliteFile } from '../../sqlite/file.js';
import { positionOf, type StoredPosition } from './positions.js';

/** The read store's tables, its connections, and how a document row becomes a RecordDocument. */

/** The tables of one generation of the read model (blue/green rebuilds build a new one beside the live one). */
export interface Tables {
  generation: number;
  collections: string;
  documents: string;
  filters: string;
  filterCounts: string;
}

/** One Tables per generation: reads ask for theirs on every request, and the texts built from it (sqlFor) are kept with it. */
const tablesByGeneration = new Map<number, Tables>();

/** Generation 1 keeps the original names, so stores made before generations existed open as they are. */
export function tablesOf(generation: number): Tables {
  let tables = tablesByGeneration.get(generation);
  if (!tables) {
    const suffix = generation === 1 ? '' : `_g${generation}`;
    tables = Object.freeze({
      generation,
      collections: `collections${suffix}`,
      documents: `documents${suffix}`,
      filters: `filters${suffix}`,
      filterCounts: `filter_counts${suffix}`,
    });
    tablesByGeneration.set(generation, tables);
  }
  return tables;
}

/**
 * A statement's text for a generation's tables, built once: the text is the key of the
 * statement caches, and a text built anew at every read is a new string for V8 to join and hash
 * before the lookup finds the statement.
 */
export function sqlFor(build: (t: Tables) => string): (t: Tables) => string {
  const texts = new WeakMap<Tables, string>();
  return (t) => {
    let text = texts.get(t);
    if (text === undefined) texts.set(t, (text = build(t)));
    return text;
  };
}

/**
 * What every generation shares: the live checkpoints, the pointer to the live generation, and the
 * link edges (only ever added, idempotently, so a generation being built re-adds the same ones).
 */
export const SCHEMA = `
CREATE TABLE IF NOT EXISTS link_edges (
  workspace_id TEXT NOT NULL,
  target TEXT NOT NULL,
  object TEXT NOT NULL,
  field TEXT NOT NULL,
  id TEXT NOT NULL,
  PRIMARY KEY (workspace_id, target, object, field, id)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS checkpoints (
  projection TEXT PRIMARY KEY,
  position TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS runner_status (
  name TEXT PRIMARY KEY,
  status TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS read_model (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  live INTEGER NOT NULL,
  live_version TEXT,
  building INTEGER,
  building_version TEXT,
  building_position TEXT,
  building_owner TEXT,
  building_started_at TEXT
);
`;

/**
 * The tables of one generation, for a generation made now: one made earlier keeps the tables it
 * has (creation positions as text: positions.ts).
 */
export function generationSchema(t: Tables): string {
  const g = t.generation === 1 ? '' : `_g${t.generation}`;
  return `
CREATE TABLE IF NOT EXISTS ${t.collections} (
  coll INTEGER PRIMARY KEY,
  workspace_id TEXT NOT NULL,
  object TEXT NOT NULL,
  documents INTEGER NOT NULL DEFAULT 0,
  UNIQUE (workspace_id, object)
);

CREATE TABLE IF NOT EXISTS ${t.documents} (
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
  created_position INTEGER NOT NULL,
  revision INTEGER NOT NULL,
  rendered TEXT,
  UNIQUE (coll, id)
);
CREATE INDEX IF NOT EXISTS documents_by_creation${g} ON ${t.documents} (coll, created_position);
CREATE INDEX IF NOT EXISTS documents_by_update${g} ON ${t.documents} (coll, updated_ms);
CREATE INDEX IF NOT EXISTS documents_by_name${g} ON ${t.documents} (coll, name_key, created_position);

CREATE TABLE IF NOT EXISTS ${t.filters} (
  coll INTEGER NOT NULL,
  field TEXT NOT NULL,
  key TEXT NOT NULL,
  created_position INTEGER NOT NULL,
  doc_id INTEGER NOT NULL,
  PRIMARY KEY (coll, field, key, created_position, doc_id)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS ${t.filterCounts} (
  coll INTEGER NOT NULL,
  field TEXT NOT NULL,
  key TEXT NOT NULL,
  n INTEGER NOT NULL,
  PRIMARY KEY (coll, field, key)
) WITHOUT ROWID;
`;
}

/**
 * A document row as an array in DOCUMENT_COLUMNS order: its statements run in raw mode, which
 * spares better-sqlite3 building an object per row (a third of a 100-row page's query time).
 */
export type DocumentRow = [
  id: string,
  name: string | null,
  fields: string,
  calculated: string,
  createdAt: string,
  updatedAt: string,
  createdPosition: StoredPosition,
  revision: number,
  rendered: string | null,
];

export interface StoredRow {
  doc_id: number;
  fields: string;
  calculated: string;
  created_position: StoredPosition;
}

export const DOCUMENT_COLUMNS = 'd.id, d.name, d.fields, d.calculated, d.created_at, d.updated_at, d.created_position, d.revision, d.rendered';

export function toDocument(workspaceId: string, object: string, row: DocumentRow): RecordDocument {
  const [id, name, fields, calculated, createdAt, updatedAt, createdPosition, revision, rendered] = row;
  return {
    workspaceId,
    object,
    id,
    name,
    fields: JSON.parse(fields) as Values,
    calculated: JSON.parse(calculated) as Values,
    createdAt,
    updatedAt,
    createdPosition: positionOf(createdPosition),
    revision,
    rendered: rendered ?? undefined,
  };
}

/** The row for a reader of its rendering: JSON.parse of fields and calculated only if asked for. */
export function toStored(workspaceId: string, object: string, row: DocumentRow): StoredRecord {
  return { id: row[0], rendered: row[8], revision: row[7], document: () => toDocument(workspaceId, object, row) };
}

/**
 * Generations made before `rendered` existed get the column (empty: read time renders those
 * documents from their fields until the projection writes them again). Run inside changeSchema.
 */
export function addRenderedColumn(db: Database.Database, t: Tables): void {
  const columns = db.prepare(`PRAGMA table_info(${t.documents})`).all() as { name: string }[];
  if (columns.length > 0 && !columns.some((column) => column.name === 'rendered')) db.exec(`ALTER TABLE ${t.documents} ADD COLUMN rendered TEXT`);
}

export function epochMs(moment: string, what: string): number {
  const ms = Date.parse(moment);
  if (Number.isNaN(ms)) throw new ValidationFailed(`${what} must be an ISO 8601 date-time, got "${moment}"`);
  return ms;
}

/**
 * How much of the file the API's mapped read connection maps into memory. Its reads of pages not in the
 * WAL then point into the map: no pread, no copy into the page cache and no page cache lookup,
 * where a GET of a store larger than the page cache paid for all three (the map costs address
 * space only; the pages it touches are the operating system's file cache, shared and reclaimable,
 * counted in RSS). Past this size the rest of the file is read as before.
 */
export const READ_MAP_BYTES = 2 ** 31 - 2 ** 16;

/** A writer, or a reader with or without the map (`readConnections.ts` says which reads take which). */
export type ConnectionKind = { readonly: false } | { readonly: true; mapped: boolean };

export function openConnection(path: string, kind: ConnectionKind): Database.Database {
  // Filter rows land all over their B-tree (one per value): a larger page cache than SQLite's
  // 2 MB default keeps projection batches and list reads off the disk.
  const db = openSqliteFile(path, { synchronous: 'NORMAL', readonly: kind.readonly, cacheMiB: 64 });
  if (kind.readonly && kind.mapped) db.pragma(`mmap_size = ${READ_MAP_BYTES}`);
  return db;
}

/** Statements of dynamic SQL, prepared once per shape. */
export class StatementCache {
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
    let statement = this.raw.get(sql);
    if (!statement) this.raw.set(sql, (statement = this.get(`/* raw */ ${sql}`).raw(true)));
    return statement;
  }

  /** documents' statements by their SQL as given (no prefixed copy of the text to hash per call). */
  private readonly raw = new Map<string, Database.Statement>();
}

// These take the connection's cache: a transaction reads through `write` (its own uncommitted
// writes), the API through `read`.
const collSql = sqlFor((t) => `SELECT coll FROM ${t.collections} WHERE workspace_id = ? AND object = ?`);
const getSql = sqlFor((t) => `SELECT ${DOCUMENT_COLUMNS} FROM ${t.documents} d WHERE d.coll = ? AND d.id = ?`);
const checkpointSql = 'SELECT position FROM checkpoints WHERE projection = ?';

export function collOn(cache: StatementCache, t: Tables, workspaceId: string, object: string): number | null {
  const row = cache.get(collSql(t)).get(workspaceId, object) as { coll: number } | undefined;
  return row ? row.coll : null;
}

export function getOn(
  cache: StatementCache,
  t: Tables,
  coll: number | null,
  workspaceId: string,
  object: string,
  id: string,
): RecordDocument | null {
  const row = getRowOn(cache, t, coll, id);
  return row ? toDocument(workspaceId, object, row) : null;
}

/** The look-up's SQL as one string per generation: the statement cache hashes it once, not on every look-up (a batch of a rebuild makes one per event). */
const getSqls = new Map<number, string>();

export function getRowOn(cache: StatementCache, t: Tables, coll: number | null, id: string): DocumentRow | null {
  if (coll === null) return null;
  let sql = getSqls.get(t.generation);
  if (sql === undefined) getSqls.set(t.generation, (sql = getSql(t)));
  return (cache.documents(sql).get(coll, id) as DocumentRow | undefined) ?? null;
}

/**
 * A document and the live generation in one statement (one snapshot, where a lookup of the live
 * generation and then of the document take two): `live` says whether `t` was still the live one.
 */
const getWithLiveSql = sqlFor(
  (t) => `SELECT r.live, ${DOCUMENT_COLUMNS} FROM read_model r LEFT JOIN ${t.documents} d ON d.coll = ? AND d.id = ? WHERE r.id = 1`,
);

export function getCheckingLive(cache: StatementCache, t: Tables, coll: number, id: string): { live: number; row: DocumentRow | null } | null {
  const row = cache.documents(getWithLiveSql(t)).get(coll, id) as [number, ...DocumentRow] | undefined;
  if (!row) return null;
  const [live, ...document] = row;
  return { live, row: document[0] === null ? null : (document as DocumentRow) };
}

/**
 * getCheckingLive for a reader of the rendering alone, as one text (pluck: no array, one value):
 * the live generation, then nothing (no such document), `;` (a document without a rendering) or
 * `:`, its revision (the ETag), `:` and its rendering.
 */
const getRenderedWithLiveSql = sqlFor(
  (t) =>
    `/* pluck */ SELECT r.live || CASE WHEN d.doc_id IS NULL THEN '' WHEN d.rendered IS NULL THEN ';' ELSE ':' || d.revision || ':' || d.rendered END ` +
    `FROM read_model r LEFT JOIN ${t.documents} d ON d.coll = ? AND d.id = ? WHERE r.id = 1`,
);

/** The live generation and the document's rendering: null when none, undefined when it has none. */
export function getRenderedCheckingLive(
  cache: StatementCache,
  t: Tables,
  coll: number,
  id: string,
): { live: number; rendered: string | null | undefined; revision?: number } | null {
  const text = cache.get(getRenderedWithLiveSql(t)).pluck(true).get(coll, id) as string | undefined;
  if (text === undefined) return null;
  const colon = text.indexOf(':');
  if (colon >= 0) {
    const second = text.indexOf(':', colon + 1);
    return { live: Number(text.slice(0, colon)), revision: Number(text.slice(colon + 1, second)), rendered: text.slice(second + 1) };
  }
  if (text.endsWith(';')) return { live: Number(text.slice(0, -1)), rendered: undefined };
  return { live: Number(text), rendered: null };
}

export function checkpointOn(cache: StatementCache, projection: string): Position | null {
  const row = cache.get(checkpointSql).get(projection) as { position: string } | undefined;
  return row ? row.position : null;
}
