/**
 * Long writes of a rebuild (filling a finished generation's filter rows, emptying an old one) in
 * chunks, each a write transaction of its own held about CHUNK_MS, with a pause between them: a
 * server beside a `csr projections rebuild` must get the write lock within its busy timeout, and
 * a writer waiting on SQLite's busy handler only tries again every 100 ms at most, so the
 * instants between back-to-back transactions are not enough for it.
 */

/** Longest a chunk should hold the lock; the next chunk's row count follows the measured rate. */
const CHUNK_MS = 50;
const PAUSE_MS = 25;

export const pause = () => new Promise((resolve) => setTimeout(resolve, PAUSE_MS));

/**
 * Runs `step(rows)` through `locked` (one write transaction each) until it returns false, sizing
 * `rows` so that a step takes about CHUNK_MS.
 */
export async function inChunks(locked: <T>(work: () => T) => Promise<T>, step: (rows: number) => boolean, firstRows = 20_000): Promise<void> {
  let rows = firstRows;
  for (;;) {
    const size = rows;
    const { more, ms } = await locked(() => {
      const started = performance.now();
      const more = step(size);
      return { more, ms: performance.now() - started };
    });
    if (!more) return;
    rows = Math.max(1_000, Math.min(500_000, Math.round((rows * CHUNK_MS) / Math.max(ms, 1))));
    await pause();
  }
}
