import { randomUUID } from 'node:crypto';
import type { AssignedNumber } from '../../commands/autoNumbers.js';
import { appendInOrder } from '../../src/eventstore/eventstoredb/appendInOrder.js';
import { asGroup, type AppendResult, type EventMetadata, type EventStore, type StreamAppend } from '../../src/eventstore/port.js';

/**
 * For the number audit's tests (issue 39 item 2): a store that writes as EventStoreDB 24 does, and
 * can "crash". Over the embedded log it gives EventStoreDB's write rules (atomic per stream only;
 * appendThen is the adapter's own appendInOrder); over a real EventStoreDB it only adds the crash.
 * `crashAfter(n)`: the process dies after its n-th append from now on (every later append of this
 * handle never answers and writes nothing).
 */
export function eventStoreDbRules(store: EventStore): { events: EventStore; crashAfter(appends: number): void } {
  let left = Infinity;
  const append = (part: StreamAppend): Promise<AppendResult> => {
    if (left <= 0) return new Promise(() => undefined);
    left -= 1;
    return store.append(part.stream, part.events, { expectedRevision: part.expectedRevision });
  };
  const events: EventStore = Object.assign(Object.create(store) as EventStore, {
    atomicGroups: false,
    append: (stream: string, written: StreamAppend['events'], options: { expectedRevision: StreamAppend['expectedRevision'] }) =>
      append({ stream, events: written, expectedRevision: options.expectedRevision }),
    appendThen: (first: Parameters<EventStore['appendThen']>[0], then: Parameters<EventStore['appendThen']>[1]) => appendInOrder(append, [first, ...then].map(asGroup)),
  });
  return {
    events,
    crashAfter: (appends: number) => {
      left = appends;
    },
  };
}

/** What a create hands AutoNumbers: its number's claim and its record, in one group. */
export function numberedRecord(recordId: string, metadata: EventMetadata) {
  return ([assigned]: AssignedNumber[]) => [
    [
      assigned!.claim(recordId),
      { stream: `record-${recordId}`, events: [{ id: randomUUID(), type: 'RecordCreated', data: { fields: { clientNumber: assigned!.value } }, metadata }], expectedRevision: 'no_stream' as const },
    ],
  ];
}
