import type { Logger } from 'pino';
import type { EventStore } from '../src/eventstore/port.js';
import type { ReadStore } from '../src/readstore/port.js';
import type { Catalogues } from '../src/setup/catalogues.js';
import { registeredProjections } from './registry.js';
import { startProjection, type RunningProjection } from './runner.js';
import { rebuildOnNewVersion, type VersionWatch } from './versions.js';

/**
 * The projector role: every registered projection on the runner, and for each read model a
 * background rebuild when its version changed (the live generation keeps serving meanwhile).
 */
export function startProjector(deps: { events: EventStore; readStore: ReadStore; logger: Logger; catalogues: Catalogues }): RunningProjection {
  const projections = registeredProjections(deps);
  const running: RunningProjection[] = projections.map((projection) => startProjection(deps, projection));
  const watches: VersionWatch[] = projections.filter((projection) => projection.kind === 'read-model').map((projection) =>
    rebuildOnNewVersion(deps, projection),
  );
  return {
    async stop() {
      await Promise.all(watches.map((watch) => watch.stop()));
      await Promise.all(running.map((projection) => projection.stop()));
    },
  };
}
