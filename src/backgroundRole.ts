import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import type { Config } from './config.js';
import { supervise, type Child, type Stoppable } from './supervisor.js';

/**
 * A background role (the projector, the dispatcher) in a worker thread of this process, the API
 * on the main thread. They need no more than that: they share no memory with the API, only the
 * stores. But a thread of its own gives a role another core, and the API's event loop no longer
 * pays for projecting and fanning out every event it appends: on two cores a single-record POST
 * went from about 300 to 200 µs of main-thread CPU. One thread per role, so that fanning out a
 * large upsert for webhooks does not hold up its projection, for which the request waits: with
 * the dispatcher beside the projector, 1,000-record upserts took p50 136-143 ms, with the
 * dispatcher apart 121-122 ms (alternating runs). Each side hears of the others' commits at
 * once through the stores' file signals.
 *
 * The thread is supervised (`supervisor`): one that cannot start stops the whole, one that dies
 * later is replaced.
 */
export function startBackgroundRole(config: Config, logger: Logger): Promise<Stoppable> {
  const roles = config.roles.join();
  const spawn = (): Promise<Child> =>
    new Promise((resolve, reject) => {
      const worker = new Worker(new URL('./backgroundRoleThread.js', import.meta.url), { workerData: config });
      let started = false;
      const exited = new Promise<string>((settle) => worker.once('exit', (code) => settle(`exit code ${code}`)));
      worker.once('message', () => {
        started = true;
        resolve({
          exited,
          async stop() {
            worker.postMessage('stop'); // the thread's own graceful stop
            await exited;
          },
        });
      });
      worker.once('error', (error) => {
        if (!started) reject(error);
        else logger.error({ err: error, roles }, 'a background role thread failed');
      });
      void exited.then((how) => {
        if (!started) reject(new Error(`the ${roles} thread could not start (${how})`));
      });
    });
  return supervise(`the ${roles} thread`, spawn, logger);
}
