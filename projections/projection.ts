import type { EventFilter, RecordedEvent } from '../src/eventstore/port.js';
import type { ReadTransaction } from '../src/readstore/port.js';

/** A projection folds log events into read models; the runner commits each batch with its checkpoint. */
export interface Projection {
  name: string;
  /**
   * The version of what `apply` builds. A release that changes how the read model is built raises
   * it; the projector then rebuilds a new generation in the background and switches to it once it
   * has caught up (projections/versions.ts). Reactors (projections that append) declare one too,
   * shown by `csr projections status`.
   */
  version: number;
  /**
   * 'read-model': owns the read store's documents and can be rebuilt blue/green. 'reactor':
   * appends events (each with a deterministic key) and keeps only a checkpoint.
   */
  kind: 'read-model' | 'reactor';
  filter: EventFilter;
  /** Must be idempotent: a replayed event (already reflected in the read model) changes nothing. */
  apply(tx: ReadTransaction, events: RecordedEvent[]): Promise<void>;
}
