import type { Pool } from '../../postgres/pool.js';
import { partitionsOf } from './schema.js';

/**
 * Planner statistics and the visibility map of the generations' partitions, kept up to date by
 * the writers themselves. Without statistics the planner takes a table for one row and may join a
 * page of filter keys to the records by reading every record of the object for each key
 * (docs/performance.md). Autovacuum does both where it runs, but it may be off, and a generation
 * just filled by a rebuild is read before it comes round.
 *
 * Statistics: a writer analyzes a generation's partitions once it has written as many rows to it
 * as were written before the last analysis (the first time after FIRST_AFTER): a handful of
 * analyses while a table grows, each a sample of at most 30,000 rows. A process that starts on a
 * partition the server has statistics of counts the rows those statistics saw as written before:
 * otherwise a restarted server analyzed a large generation whole after 500, 1,000, 2,000... of its
 * own writes (docs/performance.md, session 42), where statistics only need a new look once the
 * table has grown by about what it held.
 *
 * Visibility: a filtered list counts its matches, and reads its page, from the filter keys' index;
 * an index-only scan skips a key's table page only when the visibility map says the page is
 * settled, which only a VACUUM records. Without it every key counted visits its table page too,
 * most of a filtered list's time in the server (docs/performance.md). So every analysis is a
 * VACUUM (ANALYZE), and the rows written after it are vacuumed at most SETTLE_MS after their
 * commit (one VACUUM per generation at a time and per SETTLE_MS at most; a vacuum skips the
 * pages already settled, so it costs what was written since).
 *
 * A generation being built is only analyzed (its batches read it back by key): nobody lists it
 * before its promotion, which vacuums it whole, so settling its pages as it fills was work done
 * twice, beside the rebuild's writes. While its keys are staged (./stagedKeys.ts), the staged
 * table is analyzed in place of its keys' partition, which does not exist yet.
 *
 * These vacuums start no parallel workers (PARALLEL 0): the server would fork two for the indexes'
 * cleanup of every one, which cost far more than the vacuum of what a second of writes left
 * (docs/performance.md). A promotion's vacuum of a whole generation keeps the server's choice.
 *
 * All of it runs after the commit on a connection of the pool, never in a batch's transaction
 * (a VACUUM cannot run in one).
 */

const FIRST_AFTER = 500;
const SETTLE_MS = 1_000;

interface Counts {
  /** The rows the server's statistics counted when this process first wrote (null until read). */
  known: number | null;
  /** A generation being built: nobody lists it before its promotion, which vacuums it whole. */
  building: boolean;
  /** Its keys are staged (./stagedKeys.ts). */
  staged: boolean;
  /** Rows written to the generation by this process. */
  written: number;
  /** `written` due for the next analysis. */
  next: number;
  /** `written` when the last vacuum started. */
  vacuumed: number;
  running: boolean;
  timer: NodeJS.Timeout | null;
}

export class Analyzer {
  private readonly counts = new Map<number, Counts>();
  private closed = false;

  constructor(
    private readonly pool: Pool,
    private readonly onError: (error: unknown) => void = () => undefined,
  ) {}

  /** Rows written to `generation` (counted when written; analyzed or vacuumed after a commit, by `settle`). */
  wrote(generation: number, rows: number, building: boolean, staged = false): void {
    const count = this.counts.get(generation) ?? { known: null, building, staged, written: 0, next: FIRST_AFTER, vacuumed: 0, running: false, timer: null };
    count.building = building;
    count.staged = staged;
    count.written += rows;
    this.counts.set(generation, count);
  }

  /** Analyzes the generations that grew past their mark, and arms the vacuum of the others written to; resolves when done (callers need not wait). */
  async settle(): Promise<void> {
    for (const [generation, count] of this.counts) {
      if (this.closed) return;
      if (count.known === null) {
        count.known = await this.statisticsRows(generation);
        count.next = Math.max(count.next, count.known);
      }
      if (!count.running && count.written >= count.next) {
        count.next = count.written * 2;
        await this.run(generation, count, true);
      } else if (!count.building && count.written > count.vacuumed && count.timer === null) {
        count.timer = setTimeout(() => {
          count.timer = null;
          if (count.running) return void this.settle();
          void this.run(generation, count, false);
        }, SETTLE_MS);
        count.timer.unref();
      }
    }
  }

  /** At once: a generation that is about to be read (promoted) after being filled. */
  async analyze(generation: number): Promise<void> {
    const count = this.counts.get(generation);
    if (count) count.staged = false;
    await this.statement(generation, 'VACUUM (ANALYZE)', false);
  }

  /** No vacuum or analysis starts after this (the pool may be ended next). */
  close(): void {
    this.closed = true;
    for (const count of this.counts.values()) {
      if (count.timer !== null) clearTimeout(count.timer);
      count.timer = null;
    }
  }

  private async run(generation: number, count: Counts, analyze: boolean): Promise<void> {
    if (this.closed) return;
    count.running = true;
    count.vacuumed = count.written;
    const command = count.building ? 'ANALYZE' : `VACUUM (${analyze ? 'ANALYZE, ' : ''}PARALLEL 0)`;
    await this.statement(generation, command, count.staged).finally(() => (count.running = false));
  }

  /** statisticsRows, 0 on an error (the first mark then comes after FIRST_AFTER, as without statistics). */
  private async statisticsRows(generation: number): Promise<number> {
    try {
      return await statisticsRows(this.pool, generation);
    } catch (error) {
      this.onError(error);
      return 0;
    }
  }

  private async statement(generation: number, command: string, staged: boolean): Promise<void> {
    const { records, keys, counts, staged: stagedKeys } = partitionsOf(generation);
    try {
      await this.pool.query(`${command} ${records}, ${staged ? stagedKeys : keys}, ${counts}`);
    } catch (error) {
      // A generation dropped meanwhile, or the server away: the next mark tries again.
      this.onError(error);
    }
  }
}

/** The rows the server's statistics give a generation's records: 0 when it has none yet (never analyzed, or no such partition). */
export async function statisticsRows(pool: Pool, generation: number): Promise<number> {
  const found = await pool.query<{ rows: number }>('SELECT greatest(reltuples, 0)::float8 AS rows FROM pg_class WHERE oid = to_regclass($1)', [partitionsOf(generation).records]);
  return found.rows[0]?.rows ?? 0;
}
