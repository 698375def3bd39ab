import { Worker } from 'node:worker_threads';
import { fileThreadFits } from '../../sqlite/fileThread.js';
import type { ChainReport } from '../port.js';

/**
 * The chain check in a thread of its own, beside the read model check that `csr audit verify` runs
 * on the calling thread: the two halves share nothing but the file, so on a second idle core the
 * verification takes about as long as the longer half instead of both (docs/performance-log.md,
 * "verify lane 3"). With one core the thread would only add its start, so the check stays on the
 * calling thread there, as it does for an in-memory log (no file another connection can open) and
 * when the sources run untranslated (tests: no compiled thread script beside this file).
 */

export interface ChainThreadData {
  path: string;
  until: number;
}

export type ChainThreadMessage = { progress: number } | { report: ChainReport };

const SCRIPT = new URL('./chainThread.js', import.meta.url);
/**
 * The thread's young generation: the check makes a few short-lived strings per event, and V8's
 * default lets the young generation grow to tens of MiB, which a verification's resident memory
 * then carried on top of the calling thread's (as for the role threads: supervisedThread.ts).
 */
const YOUNG_GENERATION_MB = 8;

/** Whether a chain check of the file at `path` should run on a thread (`checkChainOnThread`). */
export function chainThreadFits(path: string, cores?: number): boolean {
  return fileThreadFits(SCRIPT, path, cores);
}

/**
 * Runs the check; `running` learns of the thread so that closing the store can end it (the
 * promise then rejects).
 */
export function checkChainOnThread(data: ChainThreadData, progress: ((events: number) => void) | undefined, running: Set<Worker>): Promise<ChainReport> {
  const worker = new Worker(SCRIPT, { workerData: data, resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB } });
  running.add(worker);
  return new Promise<ChainReport>((resolve, reject) => {
    worker.on('message', (message: ChainThreadMessage) => {
      if ('report' in message) resolve(message.report);
      else progress?.(message.progress);
    });
    worker.once('error', reject);
    worker.once('exit', (code) => {
      running.delete(worker);
      // After the report this changes nothing; before it, the thread was ended or failed.
      reject(new Error(`the chain check's thread stopped before its report (exit code ${code})`));
    });
  });
}
