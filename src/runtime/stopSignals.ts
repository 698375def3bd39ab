import cluster from 'node:cluster';
import type { Logger } from 'pino';
import { SHUTDOWN_DEADLINE_MS } from './httpServer.js';

/**
 * The signals that stop the server, and what a repeated one does: nothing but a line.
 *
 * Ctrl-C in a terminal sends SIGINT to the terminal's whole foreground process group, and `npm
 * start` passes the SIGINT it receives on to the server as well: one key press arrives twice.
 * Node's default for a signal nobody listens to is to die, which is what the second one did
 * (exit 130, requests cut). So every SIGINT or SIGTERM after the first is "still stopping": said,
 * and the stop goes on. Counting presses to force an exit cannot work when one press is two
 * signals, and is not needed: the stop itself is bounded (`boundTheStop`). SIGKILL ends it at once.
 */

/** The whole stop (requests, roles, checkpoints) ends within this, else the process exits 1. */
export const STOP_LIMIT_MS = SHUTDOWN_DEADLINE_MS + 10_000;

/** Settles with the first stop signal; later ones are logged only. */
export function stopSignals(logger: Logger): Promise<string> {
  return new Promise<string>((resolve) => {
    let first: string | null = null;
    const onSignal = (signal: NodeJS.Signals) => {
      if (first === null) {
        first = signal;
        resolve(signal);
        return;
      }
      logger.info({ signal, first }, `${signal} again: still stopping (within ${STOP_LIMIT_MS / 1000} s at most; SIGKILL stops at once)`);
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
    // An API process of API_PROCESSES: its primary is gone (even by SIGKILL), so it goes too.
    if (cluster.isWorker) process.once('disconnect', () => resolve('disconnect'));
  });
}

/** A stop that hangs (a store that no longer answers) must not keep the process for ever, now that signals cannot end it. */
export function boundTheStop(logger: Logger, limitMs = STOP_LIMIT_MS): void {
  setTimeout(() => {
    logger.error({ limitMs }, `the stop did not finish within ${limitMs / 1000} s; exiting`);
    process.exit(1);
  }, limitMs).unref();
}
