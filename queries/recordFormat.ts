import type { ReadStore, RecordDocument, StoredValue } from '../src/readstore/port.js';
import type { User } from '../src/setup/port.js';
import type { ObjectDef } from '../src/schema/types.js';
import { lookups, timeDependentCalculations } from '../projections/calculated.js';

/**
 * The REST record format (spec 2.2), shared by the API and by webhook payloads: every field key of
 * the object, links and people as { id, name } (only { id } when the caller cannot access the
 * linked object), [] for files, calculated values, createdAt and updatedAt.
 */

export type ApiRecord = Record<string, unknown> & { id: string; createdAt: string; updatedAt: string };

export interface RenderContext {
  workspaceId: string;
  readStore: ReadStore;
  listUsers(workspaceId: string): Promise<User[]>;
  canAccess(object: string): boolean;
  /** YYYY-MM-DD (UTC) of the request, for date-relative values. */
  today: string;
}

type LinkRef = { id: string; name: string | null } | { id: string };

export async function renderRecords(object: ObjectDef, documents: RecordDocument[], ctx: RenderContext): Promise<ApiRecord[]> {
  const linked = await loadLinked(object, documents, ctx);
  const users = object.fields.some((field) => field.format.type === 'person') ? await ctx.listUsers(ctx.workspaceId) : [];
  const userNames = new Map(users.map((user) => [user.id, user.name]));
  const objectLookups = lookups.filter((lookup) => lookup.object === object.key);

  return documents.map((document) => {
    const values = { ...document.fields, ...document.calculated };
    const timed = timeDependentCalculations(object.key, values, ctx.today);
    const link = (target: string, id: string): LinkRef =>
      ctx.canAccess(target) ? { id, name: linked.get(`${target}/${id}`)?.name ?? null } : { id };

    const record: Record<string, unknown> = { id: document.id };
    for (const field of object.fields) {
      const value = document.fields[field.key] ?? null;
      const format = field.format;
      switch (format.type) {
        case 'link':
          record[field.key] = typeof value === 'string' ? link(format.object, value) : null;
          break;
        case 'linkList':
          record[field.key] = Array.isArray(value) ? value.map((id) => link(format.object, id)) : [];
          break;
        case 'person':
          record[field.key] = typeof value === 'string' ? { id: value, name: userNames.get(value) ?? null } : null;
          break;
        case 'files':
          record[field.key] = [];
          break;
        case 'calculated':
          record[field.key] = (format.timeDependent ? timed[field.key] : document.calculated[field.key]) ?? null;
          break;
        default:
          record[field.key] = value;
      }
    }
    for (const lookup of objectLookups) {
      const target = object.fields.find((field) => field.key === lookup.via)?.format;
      const linkedId = document.fields[lookup.via];
      const source = target?.type === 'link' && typeof linkedId === 'string' ? linked.get(`${target.object}/${linkedId}`) : undefined;
      record[lookup.field] = (source?.fields[lookup.take] as StoredValue | undefined) ?? null;
    }
    return { ...record, id: document.id, createdAt: document.createdAt, updatedAt: document.updatedAt };
  });
}

/** Every record the documents link to, fetched with one query per linked object. */
async function loadLinked(object: ObjectDef, documents: RecordDocument[], ctx: RenderContext): Promise<Map<string, RecordDocument>> {
  const idsByObject = new Map<string, Set<string>>();
  for (const field of object.fields) {
    const format = field.format;
    if (format.type !== 'link' && format.type !== 'linkList') continue;
    const ids = idsByObject.get(format.object) ?? new Set<string>();
    for (const document of documents) {
      const value = document.fields[field.key];
      for (const id of Array.isArray(value) ? value : typeof value === 'string' ? [value] : []) ids.add(id);
    }
    idsByObject.set(format.object, ids);
  }
  const linked = new Map<string, RecordDocument>();
  await Promise.all(
    [...idsByObject].map(async ([target, ids]) => {
      if (ids.size === 0) return;
      for (const document of await ctx.readStore.getMany(ctx.workspaceId, target, [...ids])) linked.set(`${target}/${document.id}`, document);
    }),
  );
  return linked;
}

export function todayUtc(now: Date): string {
  return now.toISOString().slice(0, 10);
}
