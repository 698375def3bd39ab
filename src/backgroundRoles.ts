import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import type { Stoppable } from './apiProcesses.js';
import type { Config } from './config.js';

/**
 * The projector and the dispatcher in a worker thread of this process, the API on the main
 * thread. They need no more than that: they share no memory with the API, only the stores. But
 * a thread of their own gives them the second core, and the API's event loop no longer pays for
 * projecting and fanning out every event it appends: on two cores a single-record POST went from
 * about 300 to 200 µs of main-thread CPU. Each side hears of the other's commits at once through
 * the stores' file signals, so read-your-writes waits no longer than on one thread.
 *
 * A thread that dies after it started is replaced, as API processes are; one that cannot start
 * stops the whole.
 */
export async function startBackgroundRoles(config: Config, logger: Logger): Promise<Stoppable> {
  let stopping = false;
  let current: Worker;

  const spawn = (): Promise<Worker> =>
    new Promise((resolve, reject) => {
      const worker = new Worker(new URL('./backgroundRolesThread.js', import.meta.url), { workerData: config });
      let started = false;
      worker.once('message', () => {
        started = true;
        resolve(worker);
      });
      worker.once('error', (error) => {
        if (!started) reject(error);
        else logger.error({ err: error, roles: config.roles }, 'the background roles thread failed');
      });
      worker.once('exit', (code) => {
        if (!started) return reject(new Error(`the background roles thread could not start (exit code ${code})`));
        if (stopping) return;
        logger.error({ code, roles: config.roles }, 'the background roles thread stopped; starting another');
        spawn().then(
          (replacement) => (current = replacement),
          (error: unknown) => logger.error({ err: error }, 'could not replace the background roles thread'),
        );
      });
    });

  current = await spawn();
  return {
    async stop() {
      stopping = true;
      const exited = new Promise((resolve) => current.once('exit', resolve));
      current.postMessage('stop'); // the thread's own graceful stop
      await exited;
    },
  };
}
