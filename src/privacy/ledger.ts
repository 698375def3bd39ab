import { randomUUID } from 'node:crypto';
import { RECORD_ERASED, RECORD_STREAM_PREFIX, recordStream, type RecordErasedData } from '../events/records.js';
import type { Actor, EventStore } from '../eventstore/port.js';
import type { Position } from '../eventstore/position.js';
import { inspect } from './erase.js';
import { storedEvents, type PrivateEventStore } from './privateEvents.js';

/**
 * The erasure ledger (`csr privacy erasures`): every erasure the log records, as ids and times,
 * never a value. Restoring a backup made before an erasure brings the erased records' keys back;
 * `csr restore --reapply-erasures <ledger>` deletes them again (reapplyErasures), so the person
 * stays erased.
 */

export interface LedgerEntry {
  workspaceId: string;
  object: string;
  recordId: string;
  eventId: string;
  erasedAt: string;
}

const PAGE = 2000;

export async function erasureLedger(events: EventStore, workspaceId: string | null): Promise<LedgerEntry[]> {
  const stored = storedEvents(events);
  const entries: LedgerEntry[] = [];
  for (let from: Position | 'start' = 'start'; ; ) {
    const page = await stored.readAll({ from, maxCount: PAGE, filter: { streamPrefixes: [RECORD_STREAM_PREFIX] } });
    if (page.length === 0) break;
    for (const event of page) {
      if (event.type !== RECORD_ERASED) continue;
      const data = event.data as unknown as RecordErasedData;
      if (workspaceId !== null && data.workspaceId !== workspaceId) continue;
      entries.push({ workspaceId: data.workspaceId, object: data.object, recordId: data.recordId, eventId: event.id, erasedAt: event.created.toISOString() });
    }
    from = page.at(-1)!.position;
  }
  return entries;
}

/** A ledger as read from a file: a clear error for anything else. */
export function parseLedger(text: string): LedgerEntry[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error('the erasure ledger is not JSON (make it with: csr privacy erasures --workspace <slug> --json)');
  }
  const list = Array.isArray(parsed) ? parsed : (parsed as { erasures?: unknown })?.erasures;
  if (!Array.isArray(list) || !list.every((entry) => typeof entry?.recordId === 'string' && typeof entry?.workspaceId === 'string' && typeof entry?.object === 'string')) {
    throw new Error('the erasure ledger holds no list of erasures (make it with: csr privacy erasures --workspace <slug> --json)');
  }
  return list as LedgerEntry[];
}

export interface Reapplied {
  /** Records whose keys the restored store still had, and that are erased again now. */
  erased: { workspaceId: string; object: string; id: string; fields: string[] }[];
  position: Position | null;
}

/** Deletes again the keys of every ledger entry the restored store still has, with an `erased` event each. */
export async function reapplyErasures(events: PrivateEventStore, entries: LedgerEntry[], actor: Actor): Promise<Reapplied> {
  const byId = new Map(entries.map((entry) => [entry.recordId, entry]));
  const keys = await events.vault.existingKeys([...byId.keys()]);
  const due = [...byId.values()].filter((entry) => keys.has(entry.recordId));
  const actionId = randomUUID();
  const metadata = { source: 'app' as const, actor, actionId, correlationId: actionId, causationId: actionId };
  let position: Position | null = null;
  const erased: Reapplied['erased'] = [];
  for (const entry of due) {
    const stream = await events.stored.readStream(recordStream(entry.recordId));
    if (stream.length === 0) continue;
    const fields = [...inspect(stream, 'any').sealed];
    const data: RecordErasedData = { schemaVersion: 1, workspaceId: entry.workspaceId, object: entry.object, recordId: entry.recordId, fields, reason: `erasure of ${entry.erasedAt} re-applied after a restore` };
    erased.push({ workspaceId: entry.workspaceId, object: entry.object, id: entry.recordId, fields });
    position = (await events.append(recordStream(entry.recordId), [{ id: randomUUID(), type: RECORD_ERASED, data: { ...data }, metadata }], { expectedRevision: 'stream_exists' })).position;
  }
  await events.vault.deleteKeys(due.map((entry) => entry.recordId));
  return { erased, position };
}
