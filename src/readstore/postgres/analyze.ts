import type { Pool } from '../../postgres/pool.js';
import { partitionsOf } from './schema.js';

/**
 * Planner statistics for the generations' partitions, kept up to date by the writers themselves.
 * Without statistics the planner takes a table for one row and may join a page of filter keys to
 * the records by reading every record of the object for each key (docs/performance.md). Autovacuum
 * analyzes where it runs, but it may be off, and a generation just filled by a rebuild is read
 * before it comes round. So a writer analyzes a generation's partitions once it has written as
 * many rows to it as were written before the last analysis (the first time after FIRST_AFTER):
 * a handful of ANALYZEs while a table grows, each a sample of at most 30,000 rows, run after the
 * commit on a connection of their own, never in a batch's transaction.
 */

const FIRST_AFTER = 500;

export class Analyzer {
  private readonly counts = new Map<number, { written: number; next: number; running: boolean }>();

  constructor(
    private readonly pool: Pool,
    private readonly onError: (error: unknown) => void = () => undefined,
  ) {}

  /** Rows written to `generation` (counted when written; analyzed after a commit, by `settle`). */
  wrote(generation: number, rows: number): void {
    const count = this.counts.get(generation) ?? { written: 0, next: FIRST_AFTER, running: false };
    count.written += rows;
    this.counts.set(generation, count);
  }

  /** Analyzes the generations that grew past their mark; resolves when done (callers need not wait). */
  async settle(): Promise<void> {
    for (const [generation, count] of this.counts) {
      if (count.running || count.written < count.next) continue;
      count.running = true;
      count.next = count.written * 2;
      await this.analyze(generation).finally(() => (count.running = false));
    }
  }

  /** At once: a generation that is about to be read (promoted) after being filled. */
  async analyze(generation: number): Promise<void> {
    const { records, keys } = partitionsOf(generation);
    try {
      await this.pool.query(`ANALYZE ${records}, ${keys}`);
    } catch (error) {
      // A generation dropped meanwhile, or the server away: the next mark tries again.
      this.onError(error);
    }
  }
}
