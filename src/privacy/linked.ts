import { RECORD_STREAM_PREFIX, upcast } from '../events/records.js';
import type { EventStore, RecordedEvent } from '../eventstore/port.js';
import type { Position } from '../eventstore/position.js';
import type { Catalogue } from '../schema/catalogue.js';
import type { ObjectDef } from '../schema/types.js';
import { personalOf } from './personal.js';

/**
 * The records of a workspace that link, or ever linked, one of some contacts: found in the log
 * (a link removed since still shared the person's data then), in the link fields of objects that
 * hold personal fields (conversations, surveys, custom objects with personal fields).
 */

export interface LinkedRecord {
  object: string;
  id: string;
}

const PAGE = 2000;

export function linkingObjects(catalogue: Catalogue, target = 'contacts'): Map<string, string[]> {
  const found = new Map<string, string[]>();
  for (const object of catalogue.objects) {
    if (object.key === target || personalOf(object).size === 0) continue;
    const links = linkFields(object, target);
    if (links.length > 0) found.set(object.key, links);
  }
  return found;
}

function linkFields(object: ObjectDef, target: string): string[] {
  return [...object.fields, ...(object.inactiveFields ?? [])]
    .filter((field) => (field.format.type === 'link' || field.format.type === 'linkList') && field.format.object === target)
    .map((field) => field.key);
}

function mentions(value: unknown, ids: ReadonlySet<string>): boolean {
  if (typeof value === 'string') return ids.has(value);
  return Array.isArray(value) && value.some((item) => typeof item === 'string' && ids.has(item));
}

/** One pass over the record streams of the log (as stored: links are never sealed). */
export async function everLinked(stored: EventStore, workspaceId: string, objects: Map<string, string[]>, contactIds: ReadonlySet<string>): Promise<LinkedRecord[]> {
  const found = new Map<string, LinkedRecord>();
  const check = (event: RecordedEvent) => {
    const recordEvent = upcast(event);
    if (!recordEvent || recordEvent.data.workspaceId !== workspaceId) return;
    const links = objects.get(recordEvent.data.object);
    if (!links || found.has(recordEvent.data.recordId)) return;
    const values: unknown[] = [];
    if (recordEvent.type === 'RecordCreated' || recordEvent.type === 'RecordDeleted') for (const key of links) values.push(recordEvent.data.fields[key]);
    if (recordEvent.type === 'RecordUpdated') for (const key of links) values.push(recordEvent.data.changes[key]?.from, recordEvent.data.changes[key]?.to);
    if (values.some((value) => mentions(value, contactIds))) found.set(recordEvent.data.recordId, { object: recordEvent.data.object, id: recordEvent.data.recordId });
  };
  for (let from: Position | 'start' = 'start'; ; ) {
    const page = await stored.readAll({ from, maxCount: PAGE, filter: { streamPrefixes: [RECORD_STREAM_PREFIX] } });
    for (const event of page) check(event);
    if (page.length === 0) break;
    from = page.at(-1)!.position;
  }
  return [...found.values()];
}
