import { BatchedReads } from '../../postgres/batchedReads.js';
import type { Pool } from '../../postgres/pool.js';
import type { DocumentRow } from './rows.js';
import { LIVE } from './schema.js';

/**
 * Reads of one record by id (a GET), made together with the others on their way
 * (src/postgres/batchedReads.ts): each a probe of the records' primary key (a LATERAL subquery of
 * one row, never a join that could scan the table). `columns` renders what is read of a record
 * (as `r`) for the shape in the given SQL expression: with a shape, a record rendered with it comes
 * without its values (no jsonb for the driver to parse); without one (NULL), whole.
 */

interface PointRead {
  workspaceId: string;
  object: string;
  id: string;
  shape: string | null;
}

export class PointReads {
  private readonly batched: BatchedReads<PointRead, DocumentRow & { n: number }>;

  constructor(pool: Pool, columns: (shape: string) => string) {
    const sql = `SELECT q.n, r.*
      FROM json_to_recordset($1::json) AS q (n int, w text, o text, i text, s text)
      CROSS JOIN LATERAL (SELECT ${columns('q.s')} FROM csr_records r
        WHERE r.generation = ${LIVE} AND r.workspace_id = q.w AND r.object = q.o AND r.id = q.i LIMIT 1) r
      ORDER BY q.n`;
    this.batched = new BatchedReads(pool, sql, (read) => ({ w: read.workspaceId, o: read.object, i: read.id, s: read.shape }));
  }

  /** The statement, for the test of its plan. */
  get sql(): string {
    return this.batched.sql;
  }

  async read(workspaceId: string, object: string, id: string, shape: string | undefined): Promise<DocumentRow | null> {
    const rows = await this.batched.read({ workspaceId, object, id, shape: shape ?? null });
    return rows[0] ?? null;
  }
}
