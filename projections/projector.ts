import { backfillLinkEdges } from './linkBackfill.js';
import type { Projection } from './projection.js';
import { reactorProjections, startReactors, type ReactorRole } from './reactors.js';
import { assertDeclared, registeredProjections, type ProjectionDeps } from './registry.js';
import { rollupReactor, type RollupReactorDeps } from './rollupReactor.js';
import { startProjection, type RunningProjection } from './runner.js';
import { rebuildOnNewVersion, type VersionWatch } from './versions.js';

/**
 * The projector role: every read model and reactor of the registry (registry.ts) on the runner,
 * for each read model a background rebuild when its version changed (the live generation keeps
 * serving meanwhile), and the reactors' daily pass. The reactors' appends go through the write
 * side's commands, handed in by the composition root (src/service.ts).
 */
export interface ProjectorDeps extends ProjectionDeps, ReactorRole {
  setRollups: RollupReactorDeps['setRollups'];
}

export function startProjector(deps: ProjectorDeps): RunningProjection {
  const readModels = registeredProjections(deps);
  const rollups = rollupReactor(deps);
  const reactors = reactorProjections(deps);
  // What runs is what the registry says runs: status, the Setup page and /metrics list it.
  assertDeclared([...readModels, rollups, ...(reactors as Projection[])], ['read-model', 'reactor']);
  const running: RunningProjection[] = [...readModels, rollups].map((projection) => startProjection(deps, projection));
  const watches: VersionWatch[] = readModels.map((projection) => rebuildOnNewVersion(deps, projection));
  // Alongside, not before: the projection writes the edges after the checkpoint it starts from.
  backfillLinkEdges(deps).catch((error: unknown) =>
    deps.logger.error({ err: error }, 'adding the link edges of older records failed; reads as of a past moment may miss children until the next start'),
  );
  running.push(startReactors(deps, reactors));
  return {
    async stop() {
      await Promise.all(watches.map((watch) => watch.stop()));
      await Promise.all(running.map((projection) => projection.stop()));
    },
  };
}
