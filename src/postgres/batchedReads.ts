import { preparedQuery, type Pool } from './pool.js';

/**
 * Reads of one kind made together: while reads are on their way to the server, the ones that
 * arrive meanwhile wait and then go as one statement, however many there are. A read alone goes
 * at once, so a quiet server answers as before; under load one round trip, one parse of the reply
 * and one execution in the server serve a whole batch (docs/performance.md). The same as the
 * appender's group commit, for reads. A read is sent after it was asked for, so it sees every
 * commit before it (read-your-writes: the caller waited for the checkpoint first).
 *
 * The statement takes the batch as one JSON parameter ($1), an array of the reads' `encode`d
 * objects, each with its index as `n`: `json_to_recordset($1::json) AS q (n int, ...)`, then a
 * LATERAL subquery per read. JSON rather than arrays so that the plan is generic: the row estimate
 * of an array's unnest follows its length, and the server then kept planning every execution
 * again, which cost more than the read. Each row answered carries its read's `n`; a read's rows
 * come in the statement's order (it orders by `q.n` first).
 */

/** Statements of one kind at once; two keep one batch being answered while the next is sent. */
const IN_FLIGHT = 2;
/** Reads of one statement at most (its parameter stays small). */
const MAX_BATCH = 200;

interface Wanted<Q, R> {
  read: Q;
  resolve(rows: R[]): void;
  reject(error: unknown): void;
}

export class BatchedReads<Q, R extends { n: number }> {
  private readonly queue: Wanted<Q, R>[] = [];
  private inFlight = 0;

  constructor(
    private readonly pool: Pool,
    /** The statement (see above), public for the tests of its plan. */
    readonly sql: string,
    private readonly encode: (read: Q) => Record<string, unknown>,
  ) {}

  /** The rows of `read`, in the statement's order. */
  read(read: Q): Promise<R[]> {
    return new Promise((resolve, reject) => {
      this.queue.push({ read, resolve, reject });
      if (this.inFlight < IN_FLIGHT) void this.send();
    });
  }

  private async send(): Promise<void> {
    const batch = this.queue.splice(0, MAX_BATCH);
    this.inFlight += 1;
    try {
      const reads = JSON.stringify(batch.map((wanted, n) => ({ ...this.encode(wanted.read), n })));
      const { rows } = await preparedQuery<R>(this.pool, this.sql, [reads]);
      const answers: R[][] = batch.map(() => []);
      for (const row of rows) answers[row.n]!.push(row);
      batch.forEach((wanted, index) => wanted.resolve(answers[index]!));
    } catch (error) {
      for (const wanted of batch) wanted.reject(error);
    } finally {
      this.inFlight -= 1;
      if (this.queue.length > 0 && this.inFlight < IN_FLIGHT) void this.send();
    }
  }
}
