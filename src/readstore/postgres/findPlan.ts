import type { FindQuery } from '../port.js';
import { epochMs, nameKey, queryKeys } from './rows.js';
import { ALL_RECORDS_KEY } from './schema.js';

/**
 * FindQuery -> SQL, every value a bound parameter (the usual page sizes aside: USUAL_LIMITS).
 * Without filters the records are read in order from csr_records (by_creation, or by_name for a
 * name match); with filters the first one's keys are read in order from csr_record_keys' primary
 * key, each further filter is an exact probe of the same index, and only the page's records are
 * fetched. `updated_since` is a condition on the rows so read (a range cannot also give the
 * order). `total` is read in the same statement as the page, so the two agree: from the kept
 * counts (csr_record_counts, ./schema.ts) when the query is on one filter key or none, and nothing
 * else; else counted from the rows.
 */

/**
 * Page sizes written into the statement's text; others are bound. With the limit (or an offset)
 * bound, the server costs a statement's generic plan for a tenth of the table, which loses to every
 * custom plan: a list without a filter was planned anew at every request, planning costing more
 * than running it (docs/performance.md). A bounded set of texts, so the named statements a
 * connection keeps stay few. The first page (offset 0) has no OFFSET. Not with `updated_since`:
 * how much of the table a range takes differs from one request to the next, which a plan made
 * for each request sees (a generic one, once chosen, would stay).
 */
const USUAL_LIMITS: ReadonlySet<number> = new Set([1, 10, 20, 25, 50, 100, 200, 250, 500, 1000]);

export type RecordQuery = Pick<FindQuery, 'workspaceId' | 'object' | 'filters' | 'name' | 'updatedSince'>;

export interface FindPlan {
  /** One row per document of the page (`columns` of r.*), each with the `total` of every match. */
  sql: string;
  params: unknown[];
}

/**
 * `generation`: SQL for the generation read (the live one through the pointer, or a parameter in a
 * transaction of a generation being built). `columns`: what is read of each record (as `r`).
 * `columns` may bind parameters of its own. `page`: limit and offset, or null for every match (no total then).
 */
export function findPlan(
  query: RecordQuery,
  generation: { sql: string } | { value: number },
  columns: string | ((bind: (value: unknown) => string) => string),
  page: { limit: number; offset: number } | null): FindPlan {
  const params: unknown[] = [];
  const bind = (value: unknown) => {
    params.push(value);
    return `$${params.length}`;
  };
  const read = typeof columns === 'string' ? columns : columns(bind);
  const gen = 'sql' in generation ? generation.sql : bind(generation.value);
  const ws = bind(query.workspaceId);
  const object = bind(query.object);
  const keys = queryKeys(query.filters);
  const recordConditions: string[] = [];
  if (query.name !== undefined) recordConditions.push(`r.name_key = ${bind(nameKey(query.name))}`);
  if (query.updatedSince !== undefined) recordConditions.push(`r.updated_ms > ${bind(epochMs(query.updatedSince, 'updatedSince'))}`);

  let from: string;
  let order: string;
  /** The same matches, for the count: without a record condition the keys' index alone answers. */
  let countFrom: string;
  let firstKey: string | undefined;
  if (keys.length === 0) {
    const where = [`r.generation = ${gen}`, `r.workspace_id = ${ws}`, `r.object = ${object}`, ...recordConditions].join(' AND ');
    from = `csr_records r WHERE ${where}`;
    countFrom = from;
    order = 'r.created_position, r.id';
  } else {
    const probes = keys.slice(1).map(
      (key) =>
        `EXISTS (SELECT 1 FROM csr_record_keys k1 WHERE k1.workspace_id = k0.workspace_id AND k1.object = k0.object AND k1.key = ${bind(key)}
           AND k1.created_position = k0.created_position AND k1.id = k0.id AND k1.generation = k0.generation)`,
    );
    firstKey = bind(keys[0]);
    const keyWhere = [`k0.generation = ${gen}`, `k0.workspace_id = ${ws}`, `k0.object = ${object}`, `k0.key = ${firstKey}`, ...probes].join(' AND ');
    const join = 'JOIN csr_records r ON r.workspace_id = k0.workspace_id AND r.object = k0.object AND r.id = k0.id AND r.generation = k0.generation';
    from = `csr_record_keys k0 ${join} WHERE ${[keyWhere, ...recordConditions].join(' AND ')}`;
    countFrom = recordConditions.length === 0 ? `csr_record_keys k0 WHERE ${keyWhere}` : from;
    order = 'k0.created_position, k0.id';
  }
  if (page === null) return { sql: `SELECT ${read} FROM ${from} ORDER BY ${order}`, params };
  const pageLimit = Math.max(0, Math.floor(page.limit));
  const pageOffset = Math.max(0, Math.floor(page.offset));
  const pageInText = query.updatedSince === undefined;
  const limit = pageInText && USUAL_LIMITS.has(pageLimit) ? String(pageLimit) : bind(pageLimit);
  const offset = pageInText && pageOffset === 0 ? '' : ` OFFSET ${bind(pageOffset)}`;
  const total =
    recordConditions.length === 0 && keys.length <= 1
      ? `SELECT COALESCE((SELECT c.n::int FROM csr_record_counts c WHERE c.generation = ${gen} AND c.workspace_id = ${ws} AND c.object = ${object} AND c.key = ${firstKey ?? bind(ALL_RECORDS_KEY)}), 0) AS total`
      : `SELECT count(*)::int AS total FROM ${countFrom}`;
  // One row for the count, joined to the page: both from one snapshot. A page past the end still
  // answers the count (the LEFT JOIN keeps its row, with nulls).
  const sql = `SELECT t.total, p.* FROM (${total}) t
    LEFT JOIN LATERAL (SELECT ${read} FROM ${from} ORDER BY ${order} LIMIT ${limit}${offset}) p ON true`;
  return { sql, params };
}
