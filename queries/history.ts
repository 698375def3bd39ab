import { upcast, recordStream, type RecordEvent } from '../src/events/records.js';
import { NotFound } from '../src/core/errors.js';
import type { Actor, EventSource, EventStore, RecordedEvent } from '../src/eventstore/port.js';
import type { ReadStore, StoredValue, Values } from '../src/readstore/port.js';
import type { User } from '../src/setup/port.js';
import type { FieldDef, ObjectDef } from '../src/schema/types.js';
import { actorOf, readableData, sourceOf, viaText } from './eventView.js';
import { pagingParameters } from './paging.js';
import { referencesOf, restValue } from './storedValue.js';

/** GET /api/v1/{object}/{id}/history and `csr history`: one entry per change of a record, oldest first, from its stream. */

export interface HistoryEntry {
  revision: number;
  event: 'created' | 'updated' | 'deleted';
  occurredAt: string;
  source: EventSource;
  actor: Actor;
  via: string;
  changes: Record<string, { from: unknown; to: unknown }>;
  /** Personal fields of this change that were erased since: they read null (docs/privacy.md). */
  erased?: string[];
}

export interface HistoryPage {
  data: HistoryEntry[];
  total: number;
  limit: number;
  offset: number;
}

export interface HistoryContext {
  workspaceId: string;
  events: EventStore;
  readStore: Pick<ReadStore, 'getMany'>;
  listUsers(workspaceId: string): Promise<User[]>;
  canAccess(object: string): boolean;
}

const KINDS = { RecordCreated: 'created', RecordUpdated: 'updated', RecordDeleted: 'deleted', RecordRollupsChanged: 'updated' } as const;

/** The record's events, or NotFound (as GET says it) when it never was a record of this workspace and object. */
export async function recordEvents(ctx: Pick<HistoryContext, 'events' | 'workspaceId'>, object: ObjectDef, recordId: string): Promise<{ recorded: RecordedEvent; event: RecordEvent }[]> {
  const found: { recorded: RecordedEvent; event: RecordEvent }[] = [];
  for (const recorded of await ctx.events.readStream(recordStream(recordId))) {
    const event = upcast({ ...recorded, data: readableData(recorded) });
    if (event) found.push({ recorded, event });
  }
  const first = found[0]?.event.data;
  if (!first || first.workspaceId !== ctx.workspaceId || first.object !== object.key) throw new NotFound(`${object.key} record ${recordId} not found`);
  return found;
}

export async function recordHistory(ctx: HistoryContext, object: ObjectDef, recordId: string, query: Record<string, string[]>): Promise<HistoryPage> {
  const { limit, offset } = pagingParameters(query, []);
  const all = await recordEvents(ctx, object, recordId);
  const page = all.slice(offset, offset + limit);
  const fields = new Map(object.fields.filter((field) => field.format.type !== 'calculated' && field.format.type !== 'files').map((field) => [field.key, field]));

  const changed = page.map(({ event }) => changesOf(event, fields));
  const links = new Map<string, Set<string>>();
  const users = new Set<string>();
  for (const changes of changed) {
    for (const [key, change] of Object.entries(changes)) {
      referencesOf(fields.get(key)!, change.from, links, users);
      referencesOf(fields.get(key)!, change.to, links, users);
    }
  }
  const names = new Map<string, string | null>();
  await Promise.all(
    [...links].map(async ([target, ids]) => {
      if (!ctx.canAccess(target)) return;
      for (const document of await ctx.readStore.getMany(ctx.workspaceId, target, [...ids])) names.set(`${target}/${document.id}`, document.name);
    }),
  );
  const userNames = users.size === 0 ? new Map<string, string>() : new Map((await ctx.listUsers(ctx.workspaceId)).map((user) => [user.id, user.name]));
  const valueNames = {
    linkName: (target: string, id: string) => names.get(`${target}/${id}`) ?? null,
    userName: (id: string) => userNames.get(id) ?? null,
    canAccess: ctx.canAccess,
  };

  const data = page.map(({ recorded, event }, index): HistoryEntry => {
    const changes: HistoryEntry['changes'] = {};
    for (const [key, change] of Object.entries(changed[index]!)) {
      const field = fields.get(key)!;
      changes[key] = { from: restValue(field, change.from, valueNames), to: restValue(field, change.to, valueNames) };
    }
    return {
      revision: recorded.revision,
      event: KINDS[event.type],
      occurredAt: recorded.created.toISOString(),
      source: sourceOf(recorded.metadata),
      actor: actorOf(recorded.metadata),
      via: viaText(recorded.metadata),
      changes,
      ...(event.data.erased?.length ? { erased: event.data.erased } : {}),
    };
  });
  return { data, total: all.length, limit, offset };
}

/** Stored fields only, in the object's field order: every field set on creation, the changed ones on update, none on deletion. */
function changesOf(event: RecordEvent, fields: Map<string, FieldDef>): Record<string, { from: StoredValue; to: StoredValue }> {
  const raw: Record<string, { from: StoredValue; to: StoredValue }> = {};
  if (event.type === 'RecordCreated') {
    const values: Values = event.data.fields;
    for (const [key, value] of Object.entries(values)) if (value !== null) raw[key] = { from: null, to: value };
  } else if (event.type === 'RecordUpdated') {
    Object.assign(raw, event.data.changes);
  }
  const ordered: typeof raw = {};
  for (const key of fields.keys()) if (raw[key]) ordered[key] = raw[key];
  return ordered;
}
