import type { Logger } from 'pino';
import type { ReadinessCheck } from '../core/readiness.js';
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

/** What the thread says when its checkpoints start failing (the first error) or work again (null). */
export interface CheckpointerReport {
  problem: string | null;
}

/** Why this process's checkpoints fail at the moment (for /health/ready), or null. */
let currentProblem: string | null = null;

/**
 * For /health/ready: not ready while this process's checkpoints fail. The checkpointer runs in a
 * server's primary process; with API_PROCESSES the API processes do not see it (their disk and
 * projection checks still do).
 */
export function walCheckpointCheck(): ReadinessCheck {
  return {
    name: 'checkpoints',
    check: async () => (currentProblem ? `the write-ahead logs cannot be copied back into the store files: ${currentProblem} (retried every ${CHECKPOINT_INTERVAL_MS} ms)` : null),
  };
}

/**
 * A thread that fails to start or dies (a file it cannot open) is replaced, after a growing delay;
 * a checkpoint that fails is retried by the thread itself at the next interval, and said once.
 */
export function startWalCheckpointer(paths: string[], logger: Logger): Promise<Stoppable> {
  const data: CheckpointerData = { paths, intervalMs: CHECKPOINT_INTERVAL_MS };
  const onReport = (report: CheckpointerReport) => {
    currentProblem = report.problem;
    if (report.problem) logger.error({ problem: report.problem }, `WAL checkpoints fail: ${report.problem}; retrying every ${CHECKPOINT_INTERVAL_MS} ms`);
    else logger.info('WAL checkpoints work again');
  };
  return superviseThread('the WAL checkpointer thread', new URL('./checkpointerThread.js', import.meta.url), data, logger, onReport);
}
