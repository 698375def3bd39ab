import { RECORD_STREAM_PREFIX, upcast } from '../src/events/records.js';
import type { Actor, EventSource, EventStore } from '../src/eventstore/port.js';
import type { Position } from '../src/eventstore/position.js';
import { workspaceStream } from '../src/events/workspace.js';
import { actorOf, readableData, sourceOf, viaText } from './eventView.js';

/**
 * `csr audit export`: a workspace's events in log order, record changes and Setup changes alike,
 * one plain object per event. It pages through the log and holds one page at a time, so memory
 * stays flat however long the log is. Setup events never carry a key value or a secret (they are
 * never written to the log).
 */

export interface ExportFilter {
  workspaceId: string;
  /** Events committed at or after this moment. */
  since?: Date;
  /** Events committed at or before this moment. */
  until?: Date;
  /** Only record events of this object (Setup events are left out). */
  object?: string;
  /** Only record events of this record (Setup events are left out). */
  recordId?: string;
}

export interface ExportLine {
  position: Position;
  id: string;
  occurredAt: string;
  type: string;
  /** created, updated or deleted for record events; null for Setup events. */
  event: 'created' | 'updated' | 'deleted' | null;
  object: string | null;
  recordId: string | null;
  source: EventSource;
  actor: Actor;
  via: string;
  data: Record<string, unknown>;
  /** The audit chain hash of the event as stored (null: written before the chain began). */
  hash: string | null;
}

const PAGE = 2000;
const KINDS = { RecordCreated: 'created', RecordUpdated: 'updated', RecordDeleted: 'deleted', RecordRollupsChanged: 'updated' } as const;

/** Pages of matching lines; `progress` hears the position reached after each page of the log. */
export async function* exportEvents(events: EventStore, filter: ExportFilter, progress?: (scanned: number, position: Position) => void): AsyncGenerator<ExportLine[]> {
  const setupStream = workspaceStream(filter.workspaceId);
  const recordsOnly = filter.object !== undefined || filter.recordId !== undefined;
  const prefixes = recordsOnly ? [RECORD_STREAM_PREFIX] : [RECORD_STREAM_PREFIX, setupStream];
  const since = filter.since?.getTime() ?? -Infinity;
  const until = filter.until?.getTime() ?? Infinity;
  let scanned = 0;
  for (let from: Position | 'start' = 'start'; ; ) {
    const page = await events.readAll({ from, maxCount: PAGE, filter: { streamPrefixes: prefixes } });
    if (page.length === 0) return;
    const lines: ExportLine[] = [];
    let done = false;
    for (const event of page) {
      const created = event.created.getTime();
      // Commit times never go backwards along the log: nothing later can be before `until`.
      if (created > until) {
        done = true;
        break;
      }
      if (created < since) continue;
      const data = readableData(event);
      const isRecord = event.stream.startsWith(RECORD_STREAM_PREFIX);
      if (isRecord ? data['workspaceId'] !== filter.workspaceId : event.stream !== setupStream) continue;
      if (filter.object !== undefined && data['object'] !== filter.object) continue;
      if (filter.recordId !== undefined && data['recordId'] !== filter.recordId) continue;
      const recordEvent = isRecord ? upcast({ ...event, data }) : null;
      lines.push({
        position: event.position,
        id: event.id,
        occurredAt: event.created.toISOString(),
        type: event.type,
        event: recordEvent ? KINDS[recordEvent.type] : null,
        object: recordEvent ? recordEvent.data.object : null,
        recordId: recordEvent ? recordEvent.data.recordId : null,
        source: sourceOf(event.metadata),
        actor: actorOf(event.metadata),
        via: viaText(event.metadata),
        data,
        hash: typeof event.metadata.hash === 'string' ? event.metadata.hash : null,
      });
    }
    scanned += page.length;
    from = page.at(-1)!.position;
    progress?.(scanned, from);
    if (lines.length > 0) yield lines;
    if (done) return;
  }
}
