import { filterKey } from '../../schema/filterKey.js';
import type { FieldFilter } from '../port.js';
import { BOUND_COUNT, BOUND_VALUE } from '../../sqlite/file.js';
import { DOCUMENT_COLUMNS, epochMs, type DocumentRow, type StatementCache, type Tables } from './connection.js';

/** Find queries over one collection, planned on `filters` and `filter_counts` (see the layout in ../sqlite.ts). */

/**
 * The filter rows of one key: kept in `filter_counts` for a key of two rows or more, else counted
 * in `filters`, where such a key has at most one (documentWriter.ts, writeCounts).
 */
export function filterCount(db: StatementCache, t: Tables, coll: number, field: string, key: string): number {
  const row = db.get(`SELECT n FROM ${t.filterCounts} WHERE coll = ? AND field = ? AND key = ?`).get(coll, field, key) as { n: number } | undefined;
  return row ? row.n : filterRows(db, t, coll, field, key);
}

/** A COUNT over the key's range of `filters`: for keys without a counts row, none or one row. */
export function filterRows(db: StatementCache, t: Tables, coll: number, field: string, key: string): number {
  return (db.get(`SELECT COUNT(*) AS n FROM ${t.filters} WHERE coll = ? AND field = ? AND key = ?`).get(coll, field, key) as { n: number }).n;
}

const PROBE = (t: Tables, alias: string) =>
  `EXISTS (SELECT 1 FROM ${t.filters} f WHERE f.coll = ${BOUND_VALUE} AND f.field = ${BOUND_VALUE} AND f.key = ${BOUND_VALUE} AND f.created_position = ${alias}.created_position AND f.doc_id = ${alias}.doc_id)`;

export interface Criteria {
  filters: FieldFilter[];
  name?: string | undefined;
  updatedSince?: string | undefined;
}

/** The matching documents of one collection as SQL: `SELECT COUNT(*) FROM ${from} WHERE ${where}`. */
export interface FindPlan {
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
function planFind(db: StatementCache, t: Tables, coll: number, criteria: Criteria): FindPlan {
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
      const sizes = filters.map((filter) => filterCount(db, t, coll, filter.field, filter.key));
      driver = sizes.indexOf(Math.min(...sizes));
    }
    const first = filters[driver]!;
    probes = filters.filter((_, index) => index !== driver);
    alias = 'f0';
    from = onDocument ? `${t.filters} f0 JOIN ${t.documents} d ON d.doc_id = f0.doc_id` : `${t.filters} f0`;
    conditions.push(`f0.coll = ${BOUND_VALUE} AND f0.field = ${BOUND_VALUE} AND f0.key = ${BOUND_VALUE}`);
    params.push(coll, first.field, first.key);
  } else {
    alias = 'd';
    from = `${t.documents} d`;
    conditions.push(`d.coll = ${BOUND_VALUE}`);
    params.push(coll);
    if (criteria.name !== undefined) {
      conditions.push(`d.name_key = ${BOUND_VALUE}`);
      params.push(filterKey(criteria.name));
    }
  }
  for (const probe of probes) {
    conditions.push(PROBE(t, alias));
    params.push(coll, probe.field, probe.key);
  }
  if (criteria.updatedSince !== undefined) {
    conditions.push(`d.updated_ms > ${BOUND_VALUE}`);
    params.push(epochMs(criteria.updatedSince, 'updatedSince'));
  }
  return { from, where: conditions.join(' AND '), alias, params };
}

/** The page: ids first (from the driving index alone), then only those documents are read. */
function pageSql(t: Tables, plan: FindPlan, columns: string): string {
  const order = `${plan.alias}.created_position, ${plan.alias}.doc_id`;
  return (
    `SELECT ${columns} FROM (SELECT ${plan.alias}.doc_id AS doc_id, ${plan.alias}.created_position AS created_position ` +
    `FROM ${plan.from} WHERE ${plan.where} ORDER BY ${order} LIMIT ${BOUND_COUNT} OFFSET ${BOUND_COUNT}) p ` +
    `JOIN ${t.documents} d ON d.doc_id = p.doc_id ORDER BY p.created_position, p.doc_id`
  );
}

/** The page's rows, for the caller to make documents of. */
export function findPage(db: StatementCache, t: Tables, coll: number, criteria: Criteria, limit: number, offset: number) {
  const plan = planFind(db, t, coll, criteria);
  const rows = db.documents(pageSql(t, plan, DOCUMENT_COLUMNS)).all(...plan.params, limit, offset) as DocumentRow[];
  return { plan, rows };
}

/** A page row for a reader of stored renderings: the whole row only where its rendering does not start with the shape. */
export interface StoredPageRow {
  id: string;
  rendered: string | null;
  row: DocumentRow | null;
}

/**
 * A page row as one text, `<length of id>:<id>` and, when it has a rendering, `:<rendering>`:
 * read with pluck, better-sqlite3 makes no array per row and sets no element of it (three V8
 * calls per row and column, most of the driver's share of a page). The length is given only for
 * an id of ASCII characters, whose length SQLite and JavaScript count alike; for another the
 * text is null and the page is read as rows.
 */
const LEAN_TEXT =
  `CASE WHEN length(d.id) = length(CAST(d.id AS BLOB)) THEN length(d.id) || ':' || d.id || ` +
  `CASE WHEN d.rendered IS NULL THEN '' ELSE ':' || d.rendered END END`;

/**
 * The page as ids and renderings (half the cost of whole rows: fields and calculated values are
 * the longest texts after the rendering), then, in the same snapshot, the whole rows of the
 * records whose rendering does not start with `shape` (null: of every record).
 */
export function findStoredPage(db: StatementCache, t: Tables, coll: number, criteria: Criteria, limit: number, offset: number, shape: string | null) {
  const plan = planFind(db, t, coll, criteria);
  const lean = leanPage(db, t, plan, limit, offset);
  const missing = lean.filter(([, rendered]) => shape === null || rendered === null || !rendered.startsWith(shape)).map(([id]) => id);
  const whole = new Map<string, DocumentRow>();
  if (missing.length > 0) {
    const sql = `SELECT ${DOCUMENT_COLUMNS} FROM ${t.documents} d WHERE d.coll = ? AND d.id IN (SELECT value FROM json_each(?))`;
    for (const row of db.documents(sql).all(coll, JSON.stringify(missing)) as DocumentRow[]) whole.set(row[0], row);
  }
  const rows: StoredPageRow[] = lean.map(([id, rendered]) => ({ id, rendered, row: whole.size === 0 ? null : (whole.get(id) ?? null) }));
  return { plan, rows };
}

function leanPage(db: StatementCache, t: Tables, plan: FindPlan, limit: number, offset: number): [string, string | null][] {
  const texts = db.get(`/* pluck */ ${pageSql(t, plan, LEAN_TEXT)}`).pluck(true).all(...plan.params, limit, offset) as (string | null)[];
  const rows: [string, string | null][] = [];
  for (const text of texts) {
    if (text === null) return db.documents(pageSql(t, plan, 'd.id, d.rendered')).all(...plan.params, limit, offset) as [string, string | null][];
    const colon = text.indexOf(':');
    const end = colon + 1 + Number(text.slice(0, colon));
    rows.push([text.slice(colon + 1, end), end === text.length ? null : text.slice(end + 1)]);
  }
  return rows;
}
