import { RECORD_STREAM_PREFIX } from '../events/records.js';
import type { RecordedEvent } from '../eventstore/port.js';
import type { Position } from '../eventstore/position.js';
import { RECORDS_PROJECTION } from '../readstore/port.js';
import { eventBody } from './body.js';
import { renderData, singlePayload, type Change, type RenderDeps } from './fanOut.js';
import { recordChange } from './policy.js';
import type { EventKind } from './port.js';

/**
 * The change feed (GET /api/v1/events, docs/sync-clients.md): the record events of one workspace
 * in log order, each the body a webhook receives for it (fanOut.ts renders it, body.ts shapes it),
 * bulk actions record by record, and health-score recalculations too (webhooks leave those out,
 * spec 6.2 rule 3; a mirror needs them to hold the score GET shows). The cursor is a log position, so it outlives any read model.
 *
 * The rule that keeps pages from skipping: a page reads only up to the records projection's
 * checkpoint. The projector passes a position only after reading it from the log, and below a
 * position the embedded log has handed out, no later commit can land (one writer gives positions
 * in commit order). The data comes from the read model, which has caught up with every event
 * listed. A backend whose positions commit out of order must bound the page by its own
 * "everything below is committed" mark instead (docs/sync-clients.md).
 */

export interface FeedQuery {
  /** Events strictly after this position; 'start' for the whole log. */
  after: Position | 'start';
  limit: number;
  /** Only these objects (null: every object the key may read). */
  objects: ReadonlySet<string> | null;
  kinds: ReadonlySet<EventKind> | null;
  /** How long to wait when nothing is there yet (0: answer at once). */
  waitMs: number;
}

export interface FeedReader {
  workspaceId: string;
  canAccess(object: string): boolean;
}

export interface FeedPage {
  data: Record<string, unknown>[];
  /** Where the next page starts: after every event this one looked at. */
  next: Position | 'start';
  /** More events may be there already (fetch again at once); false: wait (or long poll). */
  hasMore: boolean;
}

/** Log events read per step; a page that looks at this many without filling up ends early. */
const SCAN_BATCH = 1_000;
const SCAN_LIMIT = 20_000;
const RECORD_EVENTS = { streamPrefixes: [RECORD_STREAM_PREFIX] };

/**
 * `stopping`: aborted when the process begins to stop. A long poll then answers at once with what
 * there is (an empty page, its cursor), so that no open poll holds a stop for up to `wait`.
 */
export async function readFeed(deps: RenderDeps, reader: FeedReader, query: FeedQuery, stopping?: AbortSignal): Promise<FeedPage> {
  const deadline = Date.now() + query.waitMs;
  let after = query.after;
  for (;;) {
    const bound = await deps.readStore.checkpoint(RECORDS_PROJECTION);
    const page = await scan(deps, reader, query, after, bound);
    const left = deadline - Date.now();
    if (page.data.length > 0 || page.hasMore || left <= 0 || stopping?.aborted) return page;
    // Nothing of this reader's up to the bound: what was looked at is passed for good, and the
    // next look starts once the projection has moved past it.
    after = page.next;
    await untilStopping(deps.readStore.waitForCheckpoint(RECORDS_PROJECTION, justAfter(bound), left), stopping);
  }
}

/** The wait, cut short when the process begins to stop (the wait itself runs out by its timeout). */
function untilStopping(waiting: Promise<unknown>, stopping: AbortSignal | undefined): Promise<unknown> {
  if (!stopping) return waiting;
  let onAbort = () => {};
  const aborted = new Promise<void>((resolve) => {
    onAbort = resolve;
    stopping.addEventListener('abort', onAbort, { once: true });
  });
  return Promise.race([waiting, aborted]).finally(() => stopping.removeEventListener('abort', onAbort));
}

/** A position compared greater than `position` and not greater than any later one (positions are fixed-width strings). */
function justAfter(position: Position | null): Position {
  return position === null ? '0' : `${position}\u0000`;
}

async function scan(deps: RenderDeps, reader: FeedReader, query: FeedQuery, after: Position | 'start', bound: Position | null): Promise<FeedPage> {
  let cursor = after;
  const wanted: Change[] = [];
  let scanned = 0;
  let reachedBound = bound === null || (cursor !== 'start' && cursor >= bound);
  while (!reachedBound && wanted.length < query.limit && scanned < SCAN_LIMIT) {
    const batch = await deps.events.readAll({ from: cursor, maxCount: SCAN_BATCH, filter: RECORD_EVENTS });
    scanned += batch.length;
    for (const event of batch) {
      if (event.position > bound!) break;
      cursor = event.position;
      const change = wants(reader, query, event);
      if (change) wanted.push(change);
      if (wanted.length === query.limit) break;
    }
    // Every record event up to the bound has been read: the cursor may move to the bound itself,
    // so that events of other workspaces (or none) after the last one listed are not read again.
    const last = batch.at(-1);
    if (wanted.length < query.limit && (batch.length < SCAN_BATCH || (last !== undefined && last.position > bound!))) cursor = bound!;
    reachedBound = cursor >= bound!;
  }
  const rendered = await renderData(deps, wanted, reader.canAccess);
  const data = wanted.flatMap(({ event, change }) => {
    const record = rendered.get(event.id);
    return record === undefined ? [] : [eventBody(singlePayload(event, change, record))];
  });
  return { data, next: cursor, hasMore: !reachedBound };
}

function wants(reader: FeedReader, query: FeedQuery, event: RecordedEvent): Change | null {
  const change = recordChange(event, true);
  if (!change || change.workspaceId !== reader.workspaceId || !reader.canAccess(change.object)) return null;
  if (query.objects && !query.objects.has(change.object)) return null;
  if (query.kinds && !query.kinds.has(change.kind)) return null;
  return { event, change };
}
