import type { EventFilter, RecordedEvent } from '../src/eventstore/port.js';
import type { Position } from '../src/eventstore/position.js';
import type { ReadTransaction } from '../src/readstore/port.js';

/**
 * A follower of the log as every listing knows it (the registry, registry.ts): no handler, since
 * nothing that lists one runs it. 'fan-out' is the webhook dispatchers' consumer group.
 */
export interface Follower {
  name: string;
  kind: Projection['kind'] | 'fan-out';
  /** Null for the webhook fan-out, which has no read model to version. */
  version: number | null;
  filter: EventFilter;
}

/** The part of a projection the registry declares: what it is, not how it runs. */
export function followerOf(projection: Pick<Projection, 'name' | 'kind' | 'version' | 'filter'>): Follower {
  return { name: projection.name, kind: projection.kind, version: projection.version, filter: projection.filter };
}

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
  /**
   * A reactor's appends for the batch, made before the batch's transaction (which then holds only
   * the checkpoint): a reaction may wait for other projections, which must not happen while this
   * one holds the read store's write transaction. A crash between the two replays the batch, so
   * every reaction carries a deterministic key that makes a repeat a no-op.
   */
  react?(events: RecordedEvent[], stopped: () => boolean): Promise<Position | null | void>;
  /**
   * A reactor's answer to: may a writer wait for this reactor to pass one of these events (read
   * your writes waits for some)? When none may and `react` appended nothing, the runner writes
   * the checkpoint later (DeferredCheckpoint). Without it, every batch's checkpoint is committed.
   */
  awaited?(events: RecordedEvent[]): boolean;
}

/**
 * Beside its checkpoint, a reactor that returns the position of its last append from `react`
 * keeps that position: a writer that waits for the reactions to its write (read your writes)
 * waits for the read models to pass it.
 */
export function appendedCheckpoint(reactor: string): string {
  return `${reactor}.appended`;
}
