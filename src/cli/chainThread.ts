import { parentPort, Worker, workerData } from 'node:worker_threads';
import { checkLog, type LogPassOptions, type LogSummary } from '../../queries/logPass.js';
import { openBackends } from '../backends.js';
import type { Config } from '../config.js';
import type { Position } from '../eventstore/position.js';

/**
 * `csr audit verify` runs its log pass (the hash chain, and the count of live records per object)
 * in this worker thread while its main thread checks the read model document by document: on two
 * cores the two halves together take little longer than the longer one (docs/performance.md).
 * The thread opens the same stores.
 */

interface Job {
  config: Config;
  until: Position | null;
  options: LogPassOptions;
}

export function logPassInThread(config: Config): (until: Position | null, options: LogPassOptions) => Promise<LogSummary> {
  return (until, options) =>
    new Promise((resolve, reject) => {
      const worker = new Worker(new URL(import.meta.url), { workerData: { config, until, options } satisfies Job });
      worker.once('message', (summary: LogSummary) => resolve(summary));
      worker.once('error', reject);
      worker.once('exit', (code) => reject(new Error(`the log pass thread stopped (exit code ${code})`)));
    });
}

if (parentPort && (workerData as Partial<Job> | null)?.config) {
  const { config, until, options } = workerData as Job;
  const backends = await openBackends(config);
  try {
    parentPort.postMessage(await checkLog(backends.events, until, options));
  } finally {
    await backends.close();
  }
}
