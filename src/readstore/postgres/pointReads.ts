import { preparedQuery, type Pool } from '../../postgres/pool.js';
import type { DocumentRow } from './rows.js';
import { LIVE } from './schema.js';

/**
 * Reads of one record by id (a GET), made together: while reads are on their way to the server,
 * the ones that arrive meanwhile wait and then go as one statement, however many there are. A read
 * alone goes at once, so a quiet server answers as before; under load one round trip, one parse
 * of the reply and one execution in the server serve a whole batch: a GET's statement cost the
 * service about as much CPU as all the rest of the request (docs/performance.md). The same as the
 * appender's group commit, for reads.
 *
 * A read is sent after it was asked for, so it sees every commit before it (read-your-writes: the
 * caller waited for the checkpoint first). `columns` renders what is read of a record (as `r`) for
 * the shape in the given SQL expression: with a shape, a record rendered with it comes without its
 * values (no jsonb for the driver to parse); without one (NULL), whole.
 */

/** Statements at once; two keep one batch being answered while the next is sent. */
const IN_FLIGHT = 2;
/** Reads of one statement at most (its arrays stay small). */
const MAX_BATCH = 200;

interface Wanted {
  workspaceId: string;
  object: string;
  id: string;
  shape: string | null;
  resolve(row: DocumentRow | null): void;
  reject(error: unknown): void;
}

export class PointReads {
  private readonly queue: Wanted[] = [];
  private inFlight = 0;
  /** The one statement (parameter $1: the reads as JSON), public for the test of its plan. */
  readonly sql: string;

  constructor(
    private readonly pool: Pool,
    columns: (shape: string) => string,
  ) {
    // One plan for every batch, planned once per connection: the reads come as one JSON parameter,
    // whose row estimate does not change with its length (with an array's unnest the server kept
    // planning each execution again, which cost more than the read), and each is one probe of the
    // records' primary key (a LATERAL subquery of one row, never a join that could scan the table).
    this.sql = `SELECT q.n, r.*
      FROM json_to_recordset($1::json) AS q (n int, w text, o text, i text, s text)
      CROSS JOIN LATERAL (SELECT ${columns('q.s')} FROM csr_records r
        WHERE r.generation = ${LIVE} AND r.workspace_id = q.w AND r.object = q.o AND r.id = q.i LIMIT 1) r`;
  }

  read(workspaceId: string, object: string, id: string, shape: string | undefined): Promise<DocumentRow | null> {
    return new Promise((resolve, reject) => {
      this.queue.push({ workspaceId, object, id, shape: shape ?? null, resolve, reject });
      if (this.inFlight < IN_FLIGHT) void this.send();
    });
  }

  private async send(): Promise<void> {
    const batch = this.queue.splice(0, MAX_BATCH);
    this.inFlight += 1;
    try {
      const reads = JSON.stringify(batch.map((wanted, n) => ({ n, w: wanted.workspaceId, o: wanted.object, i: wanted.id, s: wanted.shape })));
      const { rows } = await preparedQuery<DocumentRow & { n: number }>(this.pool, this.sql, [reads]);
      const found: (DocumentRow | null)[] = batch.map(() => null);
      for (const row of rows) found[row.n] = row;
      batch.forEach((wanted, index) => wanted.resolve(found[index]!));
    } catch (error) {
      for (const wanted of batch) wanted.reject(error);
    } finally {
      this.inFlight -= 1;
      if (this.queue.length > 0 && this.inFlight < IN_FLIGHT) void this.send();
    }
  }
}
