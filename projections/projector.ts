import type { Logger } from 'pino';
import type { EventStore } from '../src/eventstore/port.js';
import type { ReadStore } from '../src/readstore/port.js';
import { PROJECTIONS } from './registry.js';
import { startProjection, type RunningProjection } from './runner.js';
import { rebuildOnNewVersion, type VersionWatch } from './versions.js';

/**
 * The projector role: every registered projection on the runner, and for each read model a
 * background rebuild when its version changed (the live generation keeps serving meanwhile).
 */
export function startProjector(deps: { events: EventStore; readStore: ReadStore; logger: Logger }): RunningProjection {
  const running: RunningProjection[] = PROJECTIONS.map((projection) => startProjection(deps, projection));
  const watches: VersionWatch[] = PROJECTIONS.filter((projection) => projection.kind === 'read-model').map((projection) =>
    rebuildOnNewVersion(deps, projection),
  );
  return {
    async stop() {
      await Promise.all(watches.map((watch) => watch.stop()));
      await Promise.all(running.map((projection) => projection.stop()));
    },
  };
}
