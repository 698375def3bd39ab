import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import { supervise, type Child, type Stoppable } from './supervisor.js';

/**
 * A worker thread of this process running `script`, supervised (`supervisor`): one that cannot
 * start fails the start, one that dies later is replaced. The script posts a first message once
 * it has started, and stops gracefully, then exits, when it receives one.
 */
export function superviseThread(name: string, script: URL, workerData: unknown, logger: Logger): Promise<Stoppable> {
  const spawn = (): Promise<Child> =>
    new Promise((resolve, reject) => {
      const worker = new Worker(script, { workerData });
      let started = false;
      const exited = new Promise<string>((settle) => worker.once('exit', (code) => settle(`exit code ${code}`)));
      worker.once('message', () => {
        started = true;
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
