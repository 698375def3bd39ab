import { parentPort, workerData } from 'node:worker_threads';
import type { CheckpointerData, CheckpointerReport } from './checkpointer.js';
import { openSqliteFile } from './file.js';

/**
 * The worker thread of `startWalCheckpointer`: a PASSIVE checkpoint of each file every interval.
 * A checkpoint that fails (a full disk: the file cannot grow by the pages it copies) is tried
 * again at the next interval, in this thread: ending the thread would leave the WALs growing, and
 * eating the space an operator frees, for as long as its supervisor waits before a replacement.
 * Only changes are reported (failing, or working again), not every failed try.
 */

const { paths, intervalMs } = workerData as CheckpointerData;
const port = parentPort!;
// FULL: the checkpoint fsyncs the WAL before copying it and the file after.
const files = paths.map((path) => openSqliteFile(path, { synchronous: 'FULL' }));
// Unknown at first: the first round is always reported, so that a replacement thread clears what its predecessor said.
let failing: string | null | undefined;
const timer = setInterval(() => {
  let problem: string | null = null;
  for (const db of files) {
    try {
      db.pragma('wal_checkpoint(PASSIVE)');
    } catch (error) {
      problem ??= error instanceof Error ? error.message : String(error);
    }
  }
  if (problem !== failing) port.postMessage({ problem } satisfies CheckpointerReport);
  failing = problem;
}, intervalMs);
port.once('message', () => {
  clearInterval(timer);
  for (const db of files) db.close();
  process.exit(0); // ends this thread only
});
port.postMessage('started');
