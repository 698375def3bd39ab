import type { Logger } from 'pino';
import type { EventStore } from '../src/eventstore/port.js';
import type { ReadStore } from '../src/readstore/port.js';
import type { Projection } from './projection.js';
import { rebuildReadModel } from './rebuild.js';

/**
 * At the projector's start: a read model built by another version of its projection is rebuilt
 * in the background (the same machinery as `csr projections rebuild`) while the old generation
 * keeps serving, with the start, progress every 10 s and the switch in the log. A store that
 * records no version yet (new, or made before versions) takes the current one as it is.
 */

const LOG_EVERY_MS = 10_000;
const RETRY_MS = 30_000;

export interface VersionWatch {
  /** Resolves once the read model is of the current version (at once when it already is), or on stop. */
  current: Promise<void>;
  stop(): Promise<void>;
}

export function rebuildOnNewVersion(deps: { events: EventStore; readStore: ReadStore; logger: Logger }, projection: Projection): VersionWatch {
  const logger = deps.logger.child({ projection: projection.name });
  const version = String(projection.version);
  let stopped = false;
  let retry: NodeJS.Timeout | null = null;
  const abort = new AbortController();

  const attempt = async (): Promise<void> => {
    const generations = await deps.readStore.generations();
    if (generations.liveVersion === version) return;
    if (generations.liveVersion === null) {
      await deps.readStore.setLiveVersion(version);
      return;
    }
    logger.info({ from: generations.liveVersion, to: version }, 'projection version changed: rebuilding the read model in the background');
    let lastLog = performance.now();
    const result = await rebuildReadModel(deps, projection, {
      signal: abort.signal,
      onProgress(progress) {
        if (performance.now() - lastLog < LOG_EVERY_MS) return;
        lastLog = performance.now();
        logger.info({ ...progress, percent: Math.round(progress.fraction * 1000) / 10 }, 'rebuild progress');
      },
    });
    logger.info(result, 'rebuild done: reads switched to the new generation');
  };

  const current = new Promise<void>((resolve) => {
    const run = () => {
      if (stopped) return resolve();
      attempt().then(resolve, (error: unknown) => {
        if (stopped) return resolve();
        logger.error({ err: error }, 'rebuild for the new projection version failed; the old generation keeps serving; trying again');
        retry = setTimeout(run, RETRY_MS);
      });
    };
    run();
  });
  return {
    current,
    async stop() {
      stopped = true;
      abort.abort();
      if (retry) clearTimeout(retry);
      await current;
    },
  };
}
