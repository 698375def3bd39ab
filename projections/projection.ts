import type { EventFilter, RecordedEvent } from '../src/eventstore/port.js';
import type { ReadTransaction } from '../src/readstore/port.js';

/** A projection folds log events into read models; the runner commits each batch with its checkpoint. */
export interface Projection {
  name: string;
  filter: EventFilter;
  /** Must be idempotent: a replayed event (already reflected in the read model) changes nothing. */
  apply(tx: ReadTransaction, events: RecordedEvent[]): Promise<void>;
}
