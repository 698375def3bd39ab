import { BatchedReads } from '../../postgres/batchedReads.js';
import type { Pool } from '../../postgres/pool.js';
import { COLUMNS, type EventRow } from './rows.js';

/**
 * Reads of one stream (readStream), made together with the others of their direction on their way
 * (src/postgres/batchedReads.ts): a create reads its claim streams' last events before it decides,
 * one statement per create where the appends of concurrent creates already go as one commit. Each
 * read is the index range of (stream, revision) from `from`, `max` events at most (null: all).
 */

interface StreamRead {
  stream: string;
  from: number;
  max: number | null;
}

type Row = EventRow & { n: number };

export class StreamReads {
  private readonly forwards: BatchedReads<StreamRead, Row>;
  private readonly backwards: BatchedReads<StreamRead, Row>;

  constructor(pool: Pool) {
    const statement = (compare: '<=' | '>=', order: 'ASC' | 'DESC') =>
      `SELECT q.n, e.* FROM json_to_recordset($1::json) AS q (n int, s text, f int, m int)
       CROSS JOIN LATERAL (SELECT ${COLUMNS} FROM csr_events WHERE stream = q.s AND revision ${compare} q.f ORDER BY revision ${order} LIMIT q.m) e
       ORDER BY q.n, e.revision ${order}`;
    const encode = (read: StreamRead) => ({ s: read.stream, f: read.from, m: read.max });
    this.forwards = new BatchedReads(pool, statement('>=', 'ASC'), encode);
    this.backwards = new BatchedReads(pool, statement('<=', 'DESC'), encode);
  }

  read(stream: string, from: number, max: number | null, backwards: boolean): Promise<EventRow[]> {
    return (backwards ? this.backwards : this.forwards).read({ stream, from, max });
  }
}
