import { upcast, recordStream, RECORD_ERASED, type RecordErasedData, type RecordEvent } from '../src/events/records.js';
import { NotFound } from '../src/core/errors.js';
import type { Actor, EventSource, EventStore, RecordedEvent } from '../src/eventstore/port.js';
import { sameStoredValue, type StoredValue, type Values } from '../src/schema/values.js';
import type { User } from '../src/setup/port.js';
import type { FieldDef, ObjectDef } from '../src/schema/types.js';
import { actorOf, readableData, sourceOf, viaText } from './eventView.js';
import { pagingParameters } from './paging.js';
import { referencesOf, restValue } from './storedValue.js';
import { linkNamesThen } from './linkNamesThen.js';
import { initialRollups } from '../src/schema/calculated.js';
import { loadCatalogue } from '../src/setup/catalogues.js';

/** GET /api/v1/{object}/{id}/history and `csr history`: one entry per change of a record, oldest first, from its stream. */

/**
 * One field's change: its values, or, once they were erased, only that they were. An erased
 * value is not null: showing it as `from: null, to: null` would say that nothing changed.
 */
export type FieldHistory = { from: unknown; to: unknown } | { erased: true };

export interface HistoryEntry {
  revision: number;
  /** `erased`: the erasure of the record's personal data (`csr privacy erase`), never its values. */
  event: 'created' | 'updated' | 'deleted' | 'erased';
  occurredAt: string;
  source: EventSource;
  actor: Actor;
  via: string;
  changes: Record<string, FieldHistory>;
  /** Personal fields of this change that were erased since; each shows `{ erased: true }` in `changes` (docs/privacy.md). */
  erased?: string[];
  /** When those fields were erased: the `occurredAt` of the erasure's own entry. */
  erasedAt?: string;
  /** On the erasure's own entry: the reason given to `csr privacy erase` (null when none was). */
  reason?: string | null;
  /** A roll-up change (totals, balances, progress recomputed from linked records): the values that moved. */
  rollups?: Record<string, { from: unknown; to: unknown }>;
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
  listUsers(workspaceId: string): Promise<User[]>;
  canAccess(object: string): boolean;
  /** The workspace's objects, for linked records' names (read from the log when not given). */
  objectOf?: (object: string) => ObjectDef | undefined;
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
  const rollups = rollupChanges(object.key, all.map(({ event }) => event)).slice(offset, offset + limit);
  const fields = new Map(object.fields.filter((field) => field.format.type !== 'calculated' && field.format.type !== 'files').map((field) => [field.key, field]));

  const changed = page.map(({ event }) => changesOf(event, fields));
  const erasures = all.flatMap(({ recorded }) => (recorded.type === RECORD_ERASED ? [{ position: recorded.revision, at: recorded.created.toISOString(), fields: (recorded.data as unknown as RecordErasedData).fields }] : []));
  // The erasure that took a change's values: the first one at or after it that names any of its fields.
  const erasedAt = (revision: number, keys: string[]) => erasures.find((erasure) => erasure.position >= revision && erasure.fields.some((key) => keys.includes(key)))?.at;
  const links = new Map<string, Set<string>>();
  const users = new Set<string>();
  for (const changes of changed) {
    for (const [key, change] of Object.entries(changes)) {
      referencesOf(fields.get(key)!, change.from, links, users);
      referencesOf(fields.get(key)!, change.to, links, users);
    }
  }
  // Links are named as they were when each change was made, not as they are now.
  const accessible = new Map([...links].filter(([target]) => ctx.canAccess(target)));
  let objectOf = ctx.objectOf;
  if (!objectOf && accessible.size > 0) {
    const catalogue = await loadCatalogue(ctx.events, ctx.workspaceId);
    objectOf = (key) => catalogue.object(key);
  }
  const then = await linkNamesThen({ events: ctx.events, workspaceId: ctx.workspaceId, objectOf: objectOf ?? (() => undefined) }, accessible, page.map(({ recorded }) => recorded.position));
  const userNames = users.size === 0 ? new Map<string, string>() : new Map((await ctx.listUsers(ctx.workspaceId)).map((user) => [user.id, user.name]));
  const valueNamesAt = (index: number) => ({
    linkName: (target: string, id: string) => then.name(index, target, id),
    userName: (id: string) => userNames.get(id) ?? null,
    canAccess: ctx.canAccess,
  });

  const data = page.map(({ recorded, event }, index): HistoryEntry => {
    const changes: HistoryEntry['changes'] = {};
    const valueNames = valueNamesAt(index);
    const erased = event.data.erased ?? [];
    for (const [key, change] of Object.entries(changed[index]!)) {
      const field = fields.get(key)!;
      changes[key] = erased.includes(key) ? { erased: true } : { from: restValue(field, change.from, valueNames), to: restValue(field, change.to, valueNames) };
    }
    const isErasure = recorded.type === RECORD_ERASED;
    const at = erased.length > 0 ? erasedAt(recorded.revision, erased) : undefined;
    return {
      revision: recorded.revision,
      event: isErasure ? 'erased' : KINDS[event.type],
      occurredAt: recorded.created.toISOString(),
      source: sourceOf(recorded.metadata),
      actor: actorOf(recorded.metadata),
      via: viaText(recorded.metadata),
      changes,
      ...(erased.length > 0 ? { erased } : {}),
      ...(at !== undefined ? { erasedAt: at } : {}),
      ...(isErasure ? { reason: (recorded.data as unknown as RecordErasedData).reason ?? null } : {}),
      ...(rollups[index] ? { rollups: rollups[index] } : {}),
    };
  });
  return { data, total: all.length, limit, offset };
}

/**
 * Stored fields only, in the object's field order: every field set on creation (erased ones too:
 * they were set), the changed ones on update, none on deletion.
 */
function changesOf(event: RecordEvent, fields: Map<string, FieldDef>): Record<string, { from: StoredValue; to: StoredValue }> {
  const raw: Record<string, { from: StoredValue; to: StoredValue }> = {};
  if (event.type === 'RecordCreated') {
    const values: Values = event.data.fields;
    const erased = event.data.erased ?? [];
    for (const [key, value] of Object.entries(values)) if (value !== null || erased.includes(key)) raw[key] = { from: null, to: value };
  } else if (event.type === 'RecordUpdated') {
    Object.assign(raw, event.data.changes);
  }
  const ordered: typeof raw = {};
  for (const key of fields.keys()) if (raw[key]) ordered[key] = raw[key];
  return ordered;
}

/** For each event, the roll-ups a RecordRollupsChanged moved (from the one before it, or from their values over no children), else undefined. */
function rollupChanges(object: string, events: RecordEvent[]): Array<Record<string, { from: unknown; to: unknown }> | undefined> {
  let before: Values = initialRollups(object);
  return events.map((event) => {
    if (event.type !== 'RecordRollupsChanged') return undefined;
    const moved: Record<string, { from: unknown; to: unknown }> = {};
    for (const [key, to] of Object.entries(event.data.rollups)) {
      const from = before[key] ?? null;
      if (!sameStoredValue(from, to)) moved[key] = { from, to };
    }
    before = event.data.rollups;
    return moved;
  });
}
