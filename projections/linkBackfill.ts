import type { Logger } from 'pino';
import { RECORD_STREAM_PREFIX, upcast } from '../src/events/records.js';
import type { EventStore } from '../src/eventstore/port.js';
import { formatPosition, type Position } from '../src/eventstore/position.js';
import { RECORDS_PROJECTION, type LinkEdge, type ReadStore, type Values } from '../src/readstore/port.js';
import { linkEdgesOf } from './recordProjection.js';

/**
 * The upgrade path of the link edges (port.ts LinkEdge): a read model projected before they
 * existed has none for the links made until then, so reads as of a past moment would miss
 * children deleted or moved since. Once, before the records projection runs on such a store, the
 * log is read up to the projection's checkpoint and those edges are added; a marker checkpoint
 * says it is done (a fresh store is marked at once: its projection writes every edge itself).
 * Interrupted, it starts again from the beginning (adding an edge twice is a no-op).
 */

export const LINK_BACKFILL = 'recordLinks';

const PAGE = 2000;

export async function backfillLinkEdges(deps: { events: EventStore; readStore: ReadStore; logger: Logger }): Promise<void> {
  if ((await deps.readStore.checkpoint(LINK_BACKFILL)) !== null) return;
  const until = await deps.readStore.checkpoint(RECORDS_PROJECTION);
  let added = 0;
  for (let from: Position | 'start' = 'start'; until !== null; ) {
    const page = await deps.events.readAll({ from, maxCount: PAGE, filter: { streamPrefixes: [RECORD_STREAM_PREFIX] } });
    const edges: LinkEdge[] = [];
    for (const event of page) {
      if (event.position > until) break;
      const recordEvent = upcast(event);
      if (!recordEvent || recordEvent.type === 'RecordDeleted' || recordEvent.type === 'RecordRollupsChanged') continue;
      const { workspaceId, object, recordId } = recordEvent.data;
      const values: Values =
        recordEvent.type === 'RecordCreated'
          ? recordEvent.data.fields
          : Object.fromEntries(Object.entries(recordEvent.data.changes).map(([key, change]) => [key, change.to]));
      edges.push(...linkEdgesOf(workspaceId, object, recordId, values));
    }
    if (edges.length > 0) await deps.readStore.transaction((tx) => tx.addLinks(edges));
    added += edges.length;
    if (page.length < PAGE || page.at(-1)!.position >= until) break;
    from = page.at(-1)!.position;
  }
  await deps.readStore.transaction((tx) => tx.setCheckpoint(LINK_BACKFILL, until ?? formatPosition(0n)));
  if (added > 0) deps.logger.info({ edges: added }, 'link edges of records projected before they existed were added');
}
