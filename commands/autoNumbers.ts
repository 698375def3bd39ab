import { newId } from '../src/ids.js';
import { Conflict } from '../src/errors.js';
import type { EventMetadata, EventStore } from '../src/eventstore/port.js';

/**
 * Gap-free auto numbers per workspace and object. A counter stream records every reservation;
 * optimistic concurrency on it makes concurrent reservations take consecutive, never overlapping,
 * blocks, also across API processes. Within one process, requests that arrive while a reservation
 * is being written wait and are served together by the next one, so 32 concurrent writers cost one
 * append instead of a storm of conflicts. Numbers are reserved only after every record of a request
 * has been validated: a number is lost only if the process dies between reservation and append.
 */

export function counterStream(workspaceId: string, object: string): string {
  return `autonumber-${workspaceId}-${object}`;
}

interface Waiter {
  count: number;
  metadata: EventMetadata;
  resolve(first: number): void;
  reject(error: unknown): void;
}

export class AutoNumbers {
  private readonly queues = new Map<string, Waiter[]>();

  constructor(private readonly events: EventStore) {}

  /** Reserves `count` consecutive numbers and returns the first. */
  reserve(workspaceId: string, object: string, count: number, metadata: EventMetadata): Promise<number> {
    const stream = counterStream(workspaceId, object);
    return new Promise((resolve, reject) => {
      const queue = this.queues.get(stream);
      const waiter = { count, metadata, resolve, reject };
      if (queue) {
        queue.push(waiter);
        return;
      }
      this.queues.set(stream, []);
      void this.drain(stream, workspaceId, object, [waiter]);
    });
  }

  private async drain(stream: string, workspaceId: string, object: string, batch: Waiter[]): Promise<void> {
    while (batch.length > 0) {
      const total = batch.reduce((sum, waiter) => sum + waiter.count, 0);
      try {
        let next = await this.reserveBlock(stream, workspaceId, object, total, batch[0]!.metadata);
        for (const waiter of batch) {
          waiter.resolve(next);
          next += waiter.count;
        }
      } catch (error) {
        for (const waiter of batch) waiter.reject(error);
      }
      batch = this.queues.get(stream)!.splice(0);
    }
    this.queues.delete(stream);
  }

  private async reserveBlock(stream: string, workspaceId: string, object: string, count: number, metadata: EventMetadata): Promise<number> {
    for (;;) {
      const [last] = await this.events.readStream(stream, { direction: 'backwards', maxCount: 1 });
      const lastReserved = last ? Number(last.data['last']) : 0;
      try {
        await this.events.append(
          stream,
          [{ id: newId(), type: 'NumbersReserved', data: { schemaVersion: 1, workspaceId, object, first: lastReserved + 1, last: lastReserved + count }, metadata }],
          { expectedRevision: last ? last.revision : 'no_stream' },
        );
        return lastReserved + 1;
      } catch (error) {
        if (!(error instanceof Conflict)) throw error; // another process reserved meanwhile: read again
      }
    }
  }
}
