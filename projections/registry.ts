import type { Catalogues } from '../src/setup/catalogues.js';
import { recordProjection } from './recordProjection.js';
import type { Projection } from './projection.js';

/**
 * Every projection the projector runs, in the order it starts them. `csr projections status`
 * lists each of them and `rebuild --all` rebuilds every read model among them; a reactor added
 * here shows up in both without further code.
 */
export interface ProjectionDeps {
  catalogues: Catalogues;
}

export function registeredProjections(deps: ProjectionDeps): Projection[] {
  return [recordProjection(deps.catalogues)];
}
