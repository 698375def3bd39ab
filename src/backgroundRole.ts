import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import type { Stoppable } from './apiProcesses.js';
import type { Config } from './config.js';

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
 * A thread that dies after it started is replaced, as API processes are; one that cannot start
 * stops the whole.
 */
export async function startBackgroundRole(config: Config, logger: Logger): Promise<Stoppable> {
  let stopping = false;
  let current: Worker;
  const roles = config.roles;

  const spawn = (): Promise<Worker> =>
    new Promise((resolve, reject) => {
      const worker = new Worker(new URL('./backgroundRoleThread.js', import.meta.url), { workerData: config });
      let started = false;
      worker.once('message', () => {
        started = true;
        resolve(worker);
      });
      worker.once('error', (error) => {
        if (!started) reject(error);
        else logger.error({ err: error, roles }, 'a background role thread failed');
      });
      worker.once('exit', (code) => {
        if (!started) return reject(new Error(`the ${roles.join()} thread could not start (exit code ${code})`));
        if (stopping) return;
        logger.error({ code, roles }, 'a background role thread stopped; starting another');
        spawn().then(
          (replacement) => (current = replacement),
          (error: unknown) => logger.error({ err: error, roles }, 'could not replace a background role thread'),
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
