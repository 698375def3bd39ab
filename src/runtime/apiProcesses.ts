import cluster from 'node:cluster';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { supervise, type Child, type Stoppable, type Supervised } from '../core/supervisor.js';

/**
 * API_PROCESSES > 1: the API in that many processes on one port (node:cluster hands each new
 * connection to one of them), while this process runs the other roles. Reads are CPU-bound on one
 * core, so a second process is what a second core is for; writes from every process meet in the
 * stores as they do for separate deployments (ROLES), and read-your-writes waits on the shared
 * projection checkpoint.
 *
 * Each API process is supervised (`supervisor`): one that cannot start stops the whole, one that
 * dies later is replaced. When this process goes, the API processes follow (see `main`).
 */

type ApiProcess = Child & { url: string };

export async function startApiProcesses(
  config: Config,
  logger: Logger,
  startOtherRoles: (config: Config) => Promise<Stoppable>,
): Promise<Stoppable & { url: string }> {
  const otherRoles = config.roles.filter((role) => role !== 'api');
  const others = otherRoles.length > 0 ? await startOtherRoles({ ...config, roles: otherRoles }) : null;

  const fork = (): Promise<ApiProcess> =>
    new Promise((resolve, reject) => {
      const worker = cluster.fork({ ROLES: 'api' });
      let listening = false;
      const exited = new Promise<string>((settle) =>
        worker.once('exit', (code, signal) => settle(`pid ${worker.process.pid}, ${signal ? `signal ${signal}` : `exit code ${code}`}`)),
      );
      worker.once('listening', (address) => {
        listening = true;
        const host = address.addressType === 6 ? `[${address.address}]` : address.address;
        resolve({
          url: `http://${host}:${address.port}`,
          exited,
          async stop() {
            worker.process.kill('SIGTERM'); // the process's own graceful shutdown
            await exited;
          },
        });
      });
      void exited.then((how) => {
        if (!listening) reject(new Error(`an API process could not start (${how})`));
      });
    });

  const started = await Promise.allSettled(Array.from({ length: config.apiProcesses }, () => supervise('an API process', fork, logger)));
  const running: Supervised<ApiProcess>[] = started.flatMap((outcome) => (outcome.status === 'fulfilled' ? [outcome.value] : []));
  const stopAll = async () => {
    await Promise.all(running.map((each) => each.stop()));
    await others?.stop();
  };
  const failed = started.find((outcome) => outcome.status === 'rejected');
  if (failed) {
    await stopAll();
    throw failed.reason;
  }
  const url = running[0]!.first.url;
  logger.info({ apiProcesses: config.apiProcesses, url }, 'API processes started');
  return { url, stop: stopAll };
}
