import type { EventFilter, EventMetadata, RecordedEvent, StreamEvent } from '../port.js';
import { parsePosition, type Position } from '../position.js';

/** How the PostgreSQL event store reads rows of `csr_events` and turns them into events. */

export const COLUMNS = 'seq, id, stream, revision, type, created_ms, data, metadata';
/** A claim's row (schema.ts, csr_claims) as an EventRow: it has no place in the log (seq 0). */
export const CLAIM_COLUMNS = "'0'::bigint AS seq, id, stream, revision, type, created_ms, data, metadata";

/** A row as the driver gives it: bigint columns as strings, json parsed. */
export interface EventRow {
  seq: string;
  id: string;
  stream: string;
  revision: number;
  type: string;
  created_ms: string;
  data: Record<string, unknown>;
  metadata: EventMetadata;
}

/** A seq (the driver's bigint text) as a position, without a BigInt on the way. */
export function seqPosition(seq: string | number): Position {
  const digits = String(seq).padStart(20, '0');
  return `${digits}:${digits}`;
}

export function positionSeq(position: Position): string {
  return parsePosition(position).commit.toString();
}

export function rowEvent(row: EventRow): RecordedEvent {
  // The stream event with its metadata added in place: one object per event on the log's read path.
  const event = rowStreamEvent(row) as RecordedEvent;
  event.metadata = row.metadata;
  return event;
}

export function rowStreamEvent(row: Omit<EventRow, 'metadata'>): StreamEvent {
  return {
    id: row.id,
    type: row.type,
    stream: row.stream,
    revision: row.revision,
    position: seqPosition(row.seq),
    created: new Date(Number(row.created_ms)),
    data: row.data,
  };
}

/**
 * The filter as SQL on `stream`: `^@` is PostgreSQL's starts-with operator (no LIKE pattern, so a
 * prefix holding % or _ means itself). `param` is the placeholder number of the prefixes array.
 */
export function filterSql(filter: EventFilter | undefined, param: number): { sql: string; values: unknown[] } {
  if (!filter) return { sql: '', values: [] };
  return { sql: ` AND stream ^@ ANY($${param}::text[])`, values: [filter.streamPrefixes] };
}

export function validateFilter(filter: EventFilter | undefined): void {
  if (filter === undefined) return;
  if (!Array.isArray(filter.streamPrefixes) || !filter.streamPrefixes.every((p) => typeof p === 'string')) {
    throw new RangeError('filter.streamPrefixes must be an array of strings');
  }
}

/**
 * The head row as a one-row relation for the followers' reads. Read as `FROM csr_event_head`, a
 * table never analyzed (autovacuum off, or not yet round) is taken for about a thousand rows, the
 * join's cost passes jit_above_cost and every read was compiled by the JIT first: 50-75 ms for a
 * read of a millisecond. LIMIT 1 tells the planner the one row it has.
 */
export const HEAD = '(SELECT seq FROM csr_event_head LIMIT 1)';

