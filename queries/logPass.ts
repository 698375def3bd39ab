import { RECORD_STREAM_PREFIX } from '../src/events/records.js';
import { ChainCheck, type ChainBreak } from '../src/eventstore/chainCheck.js';
import type { EventStore, RecordedEvent } from '../src/eventstore/port.js';
import { hasReached, type Position } from '../src/eventstore/position.js';

/**
 * The log half of `csr audit verify`: one pass over the whole log (up to the head read at the
 * start) re-checks the hash chain and counts, per workspace and object, the records the log says
 * are live at the records read model's checkpoint. Memory stays flat: a count per object, whatever
 * the size of the log. It runs on the thread of the read model check, not a worker of its own: a
 * worker's second heap and copy of every module cost more memory than the overlap gained
 * (docs/performance.md).
 */

export interface LogSummary {
  events: number;
  chained: number;
  unchained: number;
  head: string;
  firstBreak: ChainBreak | null;
  /** "workspaceId\0object" -> records created minus records deleted, up to the checkpoint. */
  live: Record<string, number>;
}

export interface LogPassOptions {
  /** Count records only up to here (the records read model's checkpoint). */
  checkpoint: Position | null;
  /** Count only this workspace's records. */
  workspaceId?: string | undefined;
}

const PAGE = 2000;

export const groupKey = (workspaceId: string, object: string) => `${workspaceId}\u0000${object}`;

/** Reads the log up to `until` (inclusive) page by page, giving each event to `each`; answers the count. */
export async function eachEvent(events: EventStore, until: Position | null, each: (event: RecordedEvent) => void, progress?: (events: number) => void): Promise<number> {
  let count = 0;
  for (let from: Position | 'start' = 'start'; until !== null; ) {
    const page = await events.readAll({ from, maxCount: PAGE });
    for (const event of page) {
      if (event.position > until) return count;
      each(event);
      count += 1;
    }
    if (page.length === 0) return count;
    from = page.at(-1)!.position;
    progress?.(count);
  }
  return count;
}

export async function checkLog(events: EventStore, until: Position | null, options: LogPassOptions, progress?: (events: number) => void): Promise<LogSummary> {
  const chain = new ChainCheck(events.chainScope);
  const live: Record<string, number> = {};
  const count = await eachEvent(
    events,
    until,
    (event) => {
      chain.add(event);
      if (!event.stream.startsWith(RECORD_STREAM_PREFIX) || !hasReached(options.checkpoint, event.position)) return;
      const delta = event.type === 'RecordCreated' ? 1 : event.type === 'RecordDeleted' ? -1 : 0;
      const { workspaceId, object } = event.data as { workspaceId?: unknown; object?: unknown };
      if (typeof workspaceId !== 'string' || typeof object !== 'string') return;
      if (options.workspaceId !== undefined && workspaceId !== options.workspaceId) return;
      const key = groupKey(workspaceId, object);
      live[key] = (live[key] ?? 0) + delta;
    },
    progress,
  );
  return { events: count, chained: chain.chained, unchained: chain.unchained, head: chain.head, firstBreak: chain.firstBreak, live };
}
