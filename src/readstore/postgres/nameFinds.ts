import { BatchedReads } from '../../postgres/batchedReads.js';
import type { Pool } from '../../postgres/pool.js';
import type { FindQuery } from '../port.js';
import { DOCUMENT_COLUMNS, nameKey, type DocumentRow } from './rows.js';
import { LIVE } from './schema.js';

/**
 * Finds of the records with one name and nothing else, first page (an upsert's match by name, made
 * for every create): made together with the others on their way (src/postgres/batchedReads.ts).
 * Each read: the count of the name's records and the first `limit` of them in creation order, both
 * from the by-name index, in one snapshot as findPlan's statement reads them.
 */

/** A find this module answers: a name alone, the first page of at most MAX_LIMIT. */
export function isNameFind(query: FindQuery): boolean {
  return query.name !== undefined && query.filters.length === 0 && query.updatedSince === undefined && query.offset === 0 && query.limit >= 0 && query.limit <= MAX_LIMIT;
}

const MAX_LIMIT = 10;

interface NameFind {
  workspaceId: string;
  object: string;
  key: string;
  limit: number;
}

type Row = DocumentRow & { n: number; total: number };

export class NameFinds {
  private readonly batched: BatchedReads<NameFind, Row>;

  constructor(pool: Pool) {
    const sql = `SELECT q.n, t.total, p.*
      FROM json_to_recordset($1::json) AS q (n int, w text, o text, k text, l int)
      CROSS JOIN LATERAL (SELECT count(*)::int AS total FROM csr_records r
        WHERE r.generation = ${LIVE} AND r.workspace_id = q.w AND r.object = q.o AND r.name_key = q.k) t
      LEFT JOIN LATERAL (SELECT ${DOCUMENT_COLUMNS} FROM csr_records r
        WHERE r.generation = ${LIVE} AND r.workspace_id = q.w AND r.object = q.o AND r.name_key = q.k
        ORDER BY r.created_position, r.id LIMIT q.l) p ON true
      ORDER BY q.n, p.created_position, p.id`;
    this.batched = new BatchedReads(pool, sql, (find) => ({ w: find.workspaceId, o: find.object, k: find.key, l: find.limit }));
  }

  /** The statement, for the test of its plan. */
  get sql(): string {
    return this.batched.sql;
  }

  async find(query: FindQuery): Promise<{ rows: DocumentRow[]; total: number }> {
    const rows = await this.batched.read({ workspaceId: query.workspaceId, object: query.object, key: nameKey(query.name!), limit: Math.floor(query.limit) });
    return { rows: rows.filter((row) => row.id !== null), total: rows[0]?.total ?? 0 };
  }
}
