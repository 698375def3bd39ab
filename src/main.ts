import cluster from 'node:cluster';
import { pathToFileURL } from 'node:url';
import { isMainThread } from 'node:worker_threads';
import { backendName, embeddedFiles, ensureDataDir, isEmbedded } from './backends.js';
import { loadConfig } from './config.js';
import { createLogger } from './core/logger.js';
import { startApiProcesses } from './runtime/apiProcesses.js';
import { boundTheStop, stopSignals } from './runtime/stopSignals.js';
import { limitHeapGrowth } from './runtime/heapGrowth.js';
import { announceServer } from './runtime/serverPids.js';
import { startBesideTheApi, startService } from './service.js';
import { startWalCheckpointer } from './sqlite/checkpointer.js';

/** The server's entry: read the config once, start the roles, stop them on SIGTERM or SIGINT. */

async function main(): Promise<void> {
  limitHeapGrowth();
  const loaded = loadConfig(process.env);
  // Decided here, where the terminal is: the role threads' stdout is a pipe to this one.
  const config = { ...loaded, logFormat: loaded.logFormat === 'auto' ? (process.stdout.isTTY ? 'pretty' : 'json') : loaded.logFormat } as const;
  const logger = createLogger(config.logLevel, config.logFormat);
  // Listened for before anything starts: a signal that comes while the roles are starting stops
  // them once they have started, where it used to kill the process halfway through starting.
  const stopSignal = stopSignals(logger);
  // Before the announcement below writes into DATA_DIR: a DATA_DIR that cannot hold a store is said in its own line.
  if (cluster.isPrimary && isEmbedded(config)) ensureDataDir(config.dataDir);
  // So that `csr restore` knows a server uses the embedded store (the primary speaks for its API processes).
  const announced = cluster.isPrimary && isEmbedded(config) ? announceServer(config.dataDir) : null;
  const service =
    cluster.isPrimary && config.apiProcesses > 1 && config.roles.includes('api')
      ? await startApiProcesses(config, logger, (others) => startService(others, logger))
      : await startBesideTheApi(config, logger);
  // One per server: the API processes of API_PROCESSES leave their files to their primary's.
  const checkpointer =
    cluster.isPrimary && isEmbedded(config)
      ? await startWalCheckpointer(Object.values(embeddedFiles(config.dataDir)), logger).catch(async (error: unknown) => {
          await service.stop();
          throw error;
        })
      : null;
  if (cluster.isPrimary) {
    const store = backendName(config);
    const where = service.url ? `API on ${service.url}` : 'no API';
    // A primary of API_PROCESSES serves no API itself: its processes' "roles started" lines say where.
    const metricsUrl = 'metricsUrl' in service ? service.metricsUrl : null;
    const metrics = metricsUrl ? `, metrics on ${metricsUrl}` : '';
    logger.info({ url: service.url, metricsUrl, store, roles: config.roles, apiProcesses: config.apiProcesses }, `started: ${where}${metrics}, ${store}, roles ${config.roles.join(', ')}`);
  }
  const signal = await stopSignal;
  logger.info({ signal }, 'shutting down');
  boundTheStop(logger);
  try {
    await service.stop();
    await checkpointer?.stop();
    announced?.withdraw();
  } catch (error) {
    logger.error({ err: error }, 'shutdown failed');
    process.exit(1);
  }
  logger.info('stopped');
  process.exit(0);
}

// The background role threads import the service too: only the process's main thread is `main`.
if (isMainThread && process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((error: unknown) => {
    // One line that says what to do, never a stack trace (the errors that stop a start say it).
    console.error(error instanceof Error ? error.message : String(error));
    process.exit(1);
  });
}
