import type { Logger } from 'pino';
import { superviseThread } from '../core/supervisedThread.js';
import type { Stoppable } from '../core/supervisor.js';

/**
 * Copies the embedded store files' write-ahead logs back into the files, in a thread of its own.
 *
 * Left to SQLite, the commit that takes a file's WAL past `wal_autocheckpoint` pages runs the
 * checkpoint itself before it returns: it copies up to 10,000 pages (40 MiB) and fsyncs the file,
 * and whatever waits for that commit waits too. Those commits made the slow tail of 1,000-record
 * upserts (docs/performance.md).
 *
 * A PASSIVE checkpoint runs beside the writers and readers of every process without waiting for
 * them: it copies what no reader still needs, and the next write starts the WAL over once all of
 * it has been copied. Run often, each one copies little, and the WAL stays far below
 * `wal_autocheckpoint`, which remains as the bound for when no checkpointer runs (`csr`, or a
 * thread being replaced).
 */

const CHECKPOINT_INTERVAL_MS = 100;

export interface CheckpointerData {
  paths: string[];
  intervalMs: number;
}

/** A thread that fails (a file it cannot open or checkpoint) is replaced, after a growing delay. */
export function startWalCheckpointer(paths: string[], logger: Logger): Promise<Stoppable> {
  const data: CheckpointerData = { paths, intervalMs: CHECKPOINT_INTERVAL_MS };
  return superviseThread('the WAL checkpointer thread', new URL('./checkpointerThread.js', import.meta.url), data, logger);
}
