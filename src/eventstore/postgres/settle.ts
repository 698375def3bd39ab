import type { Pool } from '../../postgres/pool.js';

/**
 * The webhook group's table settled by its consumers: every event a group hands out is a row of
 * `csr_group_events` inserted, claimed and deleted once done, and a deleted row stays in the table
 * and in the primary key that every claim scans from its start until a VACUUM takes it away. With
 * autovacuum off (it may be, as on this project's machines) each claim got slower with every
 * event done (docs/performance.md). Autovacuum does it where it runs; here the consumers of a
 * process also vacuum the table once they have deleted EVERY rows since its last vacuum, one at a
 * time, never waiting for another's (SKIP_LOCKED), after the acks' own statement, never in a
 * transaction.
 */

const EVERY = 2_000;

interface State {
  deleted: number;
  running: boolean;
}

const states = new WeakMap<Pool, State>();

/** `rows` rows of csr_group_events were deleted on `pool`'s connections. */
export function groupRowsDeleted(pool: Pool, rows: number): void {
  let state = states.get(pool);
  if (!state) states.set(pool, (state = { deleted: 0, running: false }));
  state.deleted += rows;
  if (state.running || state.deleted < EVERY) return;
  state.running = true;
  state.deleted = 0;
  void pool
    // No parallel workers: forking them costs more than this small table's vacuum (see readstore/postgres/analyze.ts).
    .query('VACUUM (SKIP_LOCKED, PARALLEL 0) csr_group_events')
    // A server away or a pool closing: the next EVERY rows try again.
    .catch(() => undefined)
    .finally(() => (state.running = false));
}
