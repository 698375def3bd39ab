import type { AllStreamResolvedEvent } from '@eventstore/db-client';
import type { EventFilter, RecordedEvent } from '../port.js';
import type { Position } from '../position.js';
import { fromEsdbPosition, isAfter, isKnownPosition, matchesFilter, toRecordedEvent } from './mapping.js';

/**
 * One page of the port's readAll on EventStoreDB: `maxCount` events of ours after `from`, or fewer
 * only when the log ends. The server's pages hold system events and events outside the filter
 * (the adapter filters on its side), so one server page may yield few or none: the reading goes on
 * past such pages until the page is full or the server has no more. Callers read a short page as
 * the end of the log (the link backfill, the ledgers), which is only true because of this.
 */

/** Reads $all forwards from `from` (inclusive, as the server's fromPosition is), at most `count` items. */
export type ReadForwards = (from: Position | 'start', count: number) => AsyncIterable<AllStreamResolvedEvent>;

export async function readFullPage(read: ReadForwards, from: Position | 'start', maxCount: number, filter: EventFilter | undefined): Promise<RecordedEvent[]> {
  if (!Number.isSafeInteger(maxCount) || maxCount < 1) throw new RangeError('maxCount must be an integer >= 1');
  const page: RecordedEvent[] = [];
  let cursor = from;
  // One more than asked: the item at the cursor itself comes back first (inclusive start).
  const batch = maxCount + 1;
  for (;;) {
    let count = 0;
    let lastSeen: Position | null = null;
    for await (const resolved of read(cursor, batch)) {
      count += 1;
      const position = resolved.event?.position;
      if (isKnownPosition(position)) lastSeen = fromEsdbPosition(position);
      const event = toRecordedEvent(resolved);
      if (event === null || !isAfter(event.position, cursor) || !matchesFilter(event, filter)) continue;
      page.push(event);
      if (page.length === maxCount) return page;
    }
    // The server gave less than asked: that is the end of the log.
    if (count < batch) return page;
    // No position to go on from, or none past the cursor: nothing more can be read.
    if (lastSeen === null || !isAfter(lastSeen, cursor)) return page;
    cursor = lastSeen;
  }
}
