import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import { supervise, type Child, type Stoppable } from './supervisor.js';
// Loaded before any role thread starts, so that every thread shares this process's doorbells.
import './doorbells.js';

/**
 * The young generation of each role thread's heap. V8's default lets it grow to tens of MiB per
 * thread, and the projector and the fan-out allocate fast when large records arrive (a 5 MB bulk
 * upsert is parsed by each of their subscriptions): the process's memory then grew by about as
 * much again as the data. A small one is scavenged more often, each time cheaply, and keeps the
 * process's resident memory down (docs/performance-log.md, "auto-faults lane").
 */
const YOUNG_GENERATION_MB = 8;

/**
 * A worker thread of this process running `script`, supervised (`supervisor`): one that cannot
 * start fails the start, one that dies later is replaced. The script posts a first message once
 * it has started, and stops gracefully, then exits, when it receives one. Its later messages, if
 * any, go to `onMessage`.
 */
export function superviseThread<M>(name: string, script: URL, workerData: unknown, logger: Logger, onMessage?: (message: M) => void): Promise<Stoppable> {
  const spawn = (): Promise<Child> =>
    new Promise((resolve, reject) => {
      const worker = new Worker(script, { workerData, resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB } });
      let started = false;
      const exited = new Promise<string>((settle) => worker.once('exit', (code) => settle(`exit code ${code}`)));
      worker.once('message', () => {
        started = true;
        if (onMessage) worker.on('message', onMessage);
        resolve({
          exited,
          async stop() {
            worker.postMessage('stop');
            await exited;
          },
        });
      });
      worker.once('error', (error) => {
        if (!started) reject(error);
        else logger.error({ err: error }, `${name} failed`);
      });
      void exited.then((how) => {
        if (!started) reject(new Error(`${name} could not start (${how})`));
      });
    });
  return supervise(name, spawn, logger);
}
