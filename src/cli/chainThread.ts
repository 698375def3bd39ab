import { parentPort, Worker, workerData } from 'node:worker_threads';
import { checkChain, type ChainSummary } from '../../queries/auditVerify.js';
import { openBackends } from '../backends.js';
import type { Config } from '../config.js';
import type { Position } from '../eventstore/position.js';

/**
 * `csr audit verify` checks the hash chain in this worker thread while its main thread folds the
 * records: hashing every event costs about as much as reading it, so on two cores the two passes
 * together take little longer than one (docs/performance.md). The thread opens the same stores.
 */

interface Job {
  config: Config;
  until: Position | null;
}

export function checkChainInThread(config: Config): (until: Position | null) => Promise<ChainSummary> {
  return (until) =>
    new Promise((resolve, reject) => {
      const worker = new Worker(new URL(import.meta.url), { workerData: { config, until } satisfies Job });
      worker.once('message', (summary: ChainSummary) => resolve(summary));
      worker.once('error', reject);
      worker.once('exit', (code) => reject(new Error(`the chain check thread stopped (exit code ${code})`)));
    });
}

if (parentPort && (workerData as Partial<Job> | null)?.config) {
  const { config, until } = workerData as Job;
  const backends = await openBackends(config);
  try {
    parentPort.postMessage(await checkChain(backends.events, until));
  } finally {
    await backends.close();
  }
}
