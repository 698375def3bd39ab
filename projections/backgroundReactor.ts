import { RECORD_STREAM_PREFIX } from '../src/events/records.js';
import type { Projection } from './projection.js';

/**
 * What a reactor over record events has when it projects nothing and no writer waits for it (the
 * playbook automation and the health score): read your writes waits only for the records
 * projection and the roll-ups, so its checkpoint may be deferred (deferredCheckpoint.ts). Each
 * reactor adds its own `react` (and its daily pass).
 */
export function backgroundReactor(name: string, version: number): Omit<Projection, 'react'> {
  return {
    name,
    version,
    kind: 'reactor',
    filter: { streamPrefixes: [RECORD_STREAM_PREFIX] },
    awaited: () => false,
    async apply() {
      // Nothing to project: the reactions are appended by `react`, before the checkpoint.
    },
  };
}
