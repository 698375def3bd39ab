import { parentPort, workerData } from 'node:worker_threads';
import { openSqliteFile } from '../../sqlite/file.js';
import { EventLog } from './eventLog.js';
import { checkStoredChain } from './storedChain.js';
import type { ChainThreadData, ChainThreadMessage } from './chainOnThread.js';

/**
 * The thread of `checkChainOnThread`: the chain check over its own read-only connection to the
 * log file, its progress and then its report posted back. A failure ends the thread with an
 * error, which the caller's promise rejects with.
 */

const { path, until } = workerData as ChainThreadData;
const port = parentPort!;
const post = (message: ChainThreadMessage) => port.postMessage(message);
const db = openSqliteFile(path, { synchronous: 'NORMAL', readonly: true });
try {
  post({ report: await checkStoredChain(new EventLog(db), until, (events) => post({ progress: events })) });
} finally {
  db.close();
}
