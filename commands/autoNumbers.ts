import { newId } from '../src/core/ids.js';
import { Conflict } from '../src/core/errors.js';
import type { AppendResult, EventMetadata, EventStore, StreamAppend } from '../src/eventstore/port.js';

/**
 * Gap-free auto numbers per workspace and object. A counter stream records every reservation;
 * optimistic concurrency on it makes concurrent reservations take consecutive, never overlapping,
 * blocks, also across API processes. The records that use a block are appended with its
 * reservation (appendThen): the embedded store commits both at once, and no record is ever
 * written with numbers whose reservation failed.
 *
 * Within one process the requests of one turn of the event loop, and those that arrive while a
 * reservation is being written, are served together by one reservation: 32 concurrent writers
 * cost one commit instead of a storm of conflicts. Numbers are reserved only after every record
 * of a request has been validated: a number is lost only if a record's own append fails.
 */

export function counterStream(workspaceId: string, object: string): string {
  return `autonumber-${workspaceId}-${object}`;
}

/** Builds the appends that use `count` numbers from `first` on; called again with other numbers after a conflict. */
export type UseNumbers = (first: number) => StreamAppend[];

interface Waiter {
  count: number;
  metadata: EventMetadata;
  use: UseNumbers;
  resolve(outcomes: PromiseSettledResult<AppendResult>[]): void;
  reject(error: unknown): void;
}

export class AutoNumbers {
  private readonly queues = new Map<string, Waiter[]>();

  constructor(private readonly events: EventStore) {}

  /**
   * Reserves `count` consecutive numbers and appends what `use` builds from the first of them.
   * Resolves with the outcome of each built append; rejects, having written nothing, when the
   * reservation itself cannot be written.
   */
  reserveAndAppend(workspaceId: string, object: string, count: number, metadata: EventMetadata, use: UseNumbers): Promise<PromiseSettledResult<AppendResult>[]> {
    const stream = counterStream(workspaceId, object);
    return new Promise((resolve, reject) => {
      const waiter = { count, metadata, use, resolve, reject };
      const queue = this.queues.get(stream);
      if (queue) {
        queue.push(waiter);
        return;
      }
      this.queues.set(stream, [waiter]);
      // setImmediate: the other requests handled in this turn join the same reservation.
      setImmediate(() => void this.drain(stream, workspaceId, object));
    });
  }

  private async drain(stream: string, workspaceId: string, object: string): Promise<void> {
    const queue = this.queues.get(stream)!;
    for (let batch = queue.splice(0); batch.length > 0; batch = queue.splice(0)) {
      try {
        const outcomes = await this.reserveBlock(stream, workspaceId, object, batch);
        batch.forEach((waiter, i) => waiter.resolve(outcomes[i]!));
      } catch (error) {
        for (const waiter of batch) waiter.reject(error);
      }
    }
    this.queues.delete(stream);
  }

  /** One reservation for the whole batch; returns each waiter's outcomes. */
  private async reserveBlock(stream: string, workspaceId: string, object: string, batch: Waiter[]): Promise<PromiseSettledResult<AppendResult>[][]> {
    const count = batch.reduce((sum, waiter) => sum + waiter.count, 0);
    for (;;) {
      const [last] = await this.events.readStream(stream, { direction: 'backwards', maxCount: 1 });
      const first = (last ? Number(last.data['last']) : 0) + 1;
      let next = first;
      const built = batch.map((waiter) => {
        const appends = waiter.use(next);
        next += waiter.count;
        return appends;
      });
      const reservation: StreamAppend = {
        stream,
        events: [{ id: newId(), type: 'NumbersReserved', data: { schemaVersion: 1, workspaceId, object, first, last: first + count - 1 }, metadata: batch[0]!.metadata }],
        expectedRevision: last ? last.revision : 'no_stream',
      };
      try {
        const { then } = await this.events.appendThen(reservation, built.flat());
        let offset = 0;
        return built.map((appends) => then.slice(offset, (offset += appends.length)));
      } catch (error) {
        if (!(error instanceof Conflict)) throw error; // another process reserved meanwhile: read again
      }
    }
  }
}
