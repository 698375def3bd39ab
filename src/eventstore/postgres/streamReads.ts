import { BatchedReads } from '../../postgres/batchedReads.js';
import type { Pool } from '../../postgres/pool.js';
import { isClaimStream } from '../port.js';
import { CLAIM_COLUMNS, COLUMNS, type EventRow } from './rows.js';

/**
 * Reads of one stream (readStream), made together with the others of their direction on their way
 * (src/postgres/batchedReads.ts): a create reads its claim streams' last events before it decides,
 * one statement per create where the appends of concurrent creates already go as one commit. Each
 * read is the index range of (stream, revision) from `from`, `max` events at most (null: all).
 * Claim streams are read from their own table (schema.ts).
 */

interface StreamRead {
  stream: string;
  from: number;
  max: number | null;
}

type Row = EventRow & { n: number };

type Reads = Record<'forwards' | 'backwards', BatchedReads<StreamRead, Row>>;

export class StreamReads {
  private readonly log: Reads;
  private readonly claims: Reads;

  constructor(pool: Pool) {
    const statement = (columns: string, table: string, compare: '<=' | '>=', order: 'ASC' | 'DESC') =>
      `SELECT q.n, e.* FROM json_to_recordset($1::json) AS q (n int, s text, f int, m int)
       CROSS JOIN LATERAL (SELECT ${columns} FROM ${table} WHERE stream = q.s AND revision ${compare} q.f ORDER BY revision ${order} LIMIT q.m) e
       ORDER BY q.n, e.revision ${order}`;
    const encode = (read: StreamRead) => ({ s: read.stream, f: read.from, m: read.max });
    const reads = (columns: string, table: string): Reads => ({
      forwards: new BatchedReads(pool, statement(columns, table, '>=', 'ASC'), encode),
      backwards: new BatchedReads(pool, statement(columns, table, '<=', 'DESC'), encode),
    });
    this.log = reads(COLUMNS, 'csr_events');
    this.claims = reads(CLAIM_COLUMNS, 'csr_claims');
  }

  read(stream: string, from: number, max: number | null, backwards: boolean): Promise<EventRow[]> {
    return (isClaimStream(stream) ? this.claims : this.log)[backwards ? 'backwards' : 'forwards'].read({ stream, from, max });
  }
}
