import { parentPort, workerData } from 'node:worker_threads';
import type { CheckpointerData } from './checkpointer.js';
import { openSqliteFile } from './file.js';

/** The worker thread of `startWalCheckpointer`: a PASSIVE checkpoint of each file every interval. */

const { paths, intervalMs } = workerData as CheckpointerData;
const port = parentPort!;
// FULL: the checkpoint fsyncs the WAL before copying it and the file after.
const files = paths.map((path) => openSqliteFile(path, { synchronous: 'FULL' }));
const timer = setInterval(() => {
  // An error ends the thread, and its supervisor starts another.
  for (const db of files) db.pragma('wal_checkpoint(PASSIVE)');
}, intervalMs);
port.once('message', () => {
  clearInterval(timer);
  for (const db of files) db.close();
  process.exit(0); // ends this thread only
});
port.postMessage('started');
