import cluster, { type Worker } from 'node:cluster';
import type { Logger } from 'pino';
import type { Config } from './config.js';

/**
 * API_PROCESSES > 1: the API in that many processes on one port (node:cluster hands each new
 * connection to one of them), while this process runs the other roles. Reads are CPU-bound on one
 * core, so a second process is what a second core is for; writes from every process meet in the
 * stores as they do for separate deployments (ROLES), and read-your-writes waits on the shared
 * projection checkpoint.
 *
 * An API process that dies after it started is replaced; one that cannot start stops the whole.
 * When this process goes, the API processes follow (see `main`).
 */

export interface Stoppable {
  stop(): Promise<void>;
}

export async function startApiProcesses(
  config: Config,
  logger: Logger,
  startOtherRoles: (config: Config) => Promise<Stoppable>,
): Promise<Stoppable & { url: string }> {
  const otherRoles = config.roles.filter((role) => role !== 'api');
  const others = otherRoles.length > 0 ? await startOtherRoles({ ...config, roles: otherRoles }) : null;
  let stopping = false;

  const fork = (): Promise<{ worker: Worker; url: string }> =>
    new Promise((resolve, reject) => {
      const worker = cluster.fork({ ROLES: 'api' });
      let listening = false;
      worker.once('listening', (address) => {
        listening = true;
        const host = address.addressType === 6 ? `[${address.address}]` : address.address;
        resolve({ worker, url: `http://${host}:${address.port}` });
      });
      worker.once('exit', (code, signal) => {
        if (stopping) return;
        if (!listening) return reject(new Error(`an API process could not start (exit code ${code ?? signal})`));
        logger.error({ pid: worker.process.pid, code, signal }, 'an API process died; starting another');
        void fork().catch((error: unknown) => logger.error({ err: error }, 'could not replace the API process'));
      });
    });

  const stopWorkers = async () => {
    stopping = true;
    await Promise.all(
      Object.values(cluster.workers ?? {}).map(async (worker) => {
        if (!worker || worker.isDead()) return;
        const exited = new Promise((resolve) => worker.once('exit', resolve));
        worker.process.kill('SIGTERM'); // the worker's own graceful shutdown
        await exited;
      }),
    );
  };

  let started: { url: string }[];
  try {
    started = await Promise.all(Array.from({ length: config.apiProcesses }, fork));
  } catch (error) {
    await stopWorkers();
    await others?.stop();
    throw error;
  }
  const url = started[0]!.url;
  logger.info({ apiProcesses: config.apiProcesses, url }, 'API processes started');
  return {
    url,
    async stop() {
      await stopWorkers();
      await others?.stop();
    },
  };
}
