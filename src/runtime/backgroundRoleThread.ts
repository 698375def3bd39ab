import { parentPort, workerData } from 'node:worker_threads';
import type { Config } from '../config.js';
import { createLogger } from '../core/logger.js';
import { startService } from '../service.js';

/** The worker thread of `startBackgroundRole`: the role it was given, until it is told to stop. */

const config = workerData as Config;
const port = parentPort!;
const service = await startService(config, createLogger(config.logLevel, config.logFormat));
port.once('message', () => {
  service.stop().then(
    () => process.exit(0), // ends this thread only
    () => process.exit(1),
  );
});
port.postMessage('started');
