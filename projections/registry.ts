import type { Catalogues } from '../src/setup/catalogues.js';
import { WEBHOOKS_FILTER, WEBHOOKS_GROUP } from '../src/webhooks/port.js';
import { AUTOMATION_FOLLOWER } from './automation/reactor.js';
import { HEALTH_SCORE_FOLLOWER } from './health/reactor.js';
import type { Follower, Projection } from './projection.js';
import { recordProjection, recordsFollower } from './recordProjection.js';
import { ROLLUPS_FOLLOWER } from './rollupReactor.js';

/**
 * The registry of followers: every projection and reactor of the log, and the webhook fan-out,
 * with its name, kind and version, in the order the projector starts them and every listing
 * shows them. The projector (projector.ts) starts the read models and reactors declared here and
 * refuses to start when what it builds differs; `csr projections status`, the Setup page and
 * /metrics (src/runtime/observability.ts) list them from here. A follower added here shows up in
 * all of them without further code.
 */
export function followers(): Follower[] {
  return [recordsFollower(), ROLLUPS_FOLLOWER, AUTOMATION_FOLLOWER, HEALTH_SCORE_FOLLOWER, FAN_OUT_FOLLOWER];
}

/** The webhook fan-out: the dispatcher role's consumer group (src/webhooks/dispatcher.ts), not the projector's. */
export const FAN_OUT_FOLLOWER: Follower = { name: WEBHOOKS_GROUP, kind: 'fan-out', version: null, filter: WEBHOOKS_FILTER };

export interface ProjectionDeps {
  catalogues: Catalogues;
}

/** How each read model of the registry is built: what the projector runs and `csr projections rebuild` rebuilds. */
const READ_MODELS: Record<string, (deps: ProjectionDeps) => Projection> = {
  [recordsFollower().name]: (deps) => recordProjection(deps.catalogues),
};

/** The registry's read models, built, in its order. */
export function registeredProjections(deps: ProjectionDeps): Projection[] {
  return followers()
    .filter((follower) => follower.kind === 'read-model')
    .map((follower) => {
      const build = READ_MODELS[follower.name];
      if (!build) throw new Error(`the registry declares the read model "${follower.name}" but nothing builds it`);
      return build(deps);
    });
}

/** Throws unless `built` are exactly the registry's followers of `kinds`, in its order, with its names, kinds and versions. */
export function assertDeclared(built: readonly Projection[], kinds: readonly Follower['kind'][]): void {
  const declared = followers().filter((follower) => kinds.includes(follower.kind));
  const describe = (list: readonly Pick<Follower, 'name' | 'kind' | 'version'>[]) => list.map((f) => `${f.name} (${f.kind} v${f.version})`).join(', ');
  if (describe(built) !== describe(declared)) throw new Error(`the projector builds ${describe(built)} where the registry declares ${describe(declared)}`);
}
