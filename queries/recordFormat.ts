import type { ReadStore, RecordDocument, StoredValue } from '../src/readstore/port.js';
import type { User } from '../src/setup/port.js';
import type { ObjectDef } from '../src/schema/types.js';
import { lookups, timeDependentCalculations } from '../src/schema/calculated.js';

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

/** What rendering itself reads: linked records by id (GET: the read store; as-of reads: the log). */
export type RenderDeps = Omit<RenderContext, 'readStore'> & { readStore: Pick<ReadStore, 'getMany'> };

type LinkRef = { id: string; name: string | null } | { id: string };

export async function renderRecords(object: ObjectDef, documents: RecordDocument[], ctx: RenderDeps): Promise<ApiRecord[]> {
  const plan = renderPlanOf(object);
  const [linked, userNames] = await Promise.all([loadLinked(plan, documents, ctx), loadUserNames(plan, documents, ctx)]);
  const link = (target: string, id: string): LinkRef =>
    ctx.canAccess(target) ? { id, name: linked.get(`${target}/${id}`)?.name ?? null } : { id };

  return documents.map((document) => {
    // Only objects with date-relative values pay for recomputing them.
    const timed = plan.hasTimed ? timeDependentCalculations(object.key, { ...document.fields, ...document.calculated }, ctx.today) : {};
    // Built in the order of the answer (id, fields, lookups, createdAt, updatedAt): no copy at the end.
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
    for (const lookup of plan.lookups) {
      const linkedId = document.fields[lookup.via];
      const source = lookup.target !== null && typeof linkedId === 'string' ? linked.get(`${lookup.target}/${linkedId}`) : undefined;
      record[lookup.field] = (source?.fields[lookup.take] as StoredValue | undefined) ?? null;
    }
    record['id'] = document.id;
    record['createdAt'] = document.createdAt;
    record['updatedAt'] = document.updatedAt;
    return record as ApiRecord;
  });
}

/**
 * What rendering needs to know of an object's definition, worked out once per object: finding
 * it again on every call cost a GET of one record about 7% of its instructions.
 */
interface RenderPlan {
  /** Link and link list fields, with the object each points at. */
  links: { field: string; target: string }[];
  persons: string[];
  /** The object's lookups, each with the object its link field points at (null: not a link). */
  lookups: { field: string; via: string; take: string; target: string | null }[];
  hasTimed: boolean;
}

const renderPlans = new WeakMap<ObjectDef, RenderPlan>();

function renderPlanOf(object: ObjectDef): RenderPlan {
  let plan = renderPlans.get(object);
  if (plan) return plan;
  const links: RenderPlan['links'] = [];
  const persons: string[] = [];
  for (const { key, format } of object.fields) {
    if (format.type === 'link' || format.type === 'linkList') links.push({ field: key, target: format.object });
    else if (format.type === 'person') persons.push(key);
  }
  plan = {
    links,
    persons,
    lookups: lookups
      .filter((lookup) => lookup.object === object.key)
      .map((lookup) => {
        const format = object.fields.find((field) => field.key === lookup.via)?.format;
        return { field: lookup.field, via: lookup.via, take: lookup.take, target: format?.type === 'link' ? format.object : null };
      }),
    hasTimed: object.fields.some((field) => field.format.type === 'calculated' && field.format.timeDependent),
  };
  renderPlans.set(object, plan);
  return plan;
}

const NO_USER_NAMES: ReadonlyMap<string, string> = new Map();

/** User names by id, read only when a document names a person (the list is a setup store query). */
async function loadUserNames(plan: RenderPlan, documents: RecordDocument[], ctx: RenderDeps): Promise<ReadonlyMap<string, string>> {
  const named = documents.some((document) => plan.persons.some((key) => typeof document.fields[key] === 'string'));
  if (!named) return NO_USER_NAMES;
  return new Map((await ctx.listUsers(ctx.workspaceId)).map((user) => [user.id, user.name]));
}

/** Every record the documents link to, fetched with one query per linked object. */
async function loadLinked(plan: RenderPlan, documents: RecordDocument[], ctx: RenderDeps): Promise<Map<string, RecordDocument>> {
  const idsByObject = new Map<string, Set<string>>();
  for (const { field, target } of plan.links) {
    for (const document of documents) {
      const value = document.fields[field];
      for (const id of Array.isArray(value) ? value : typeof value === 'string' ? [value] : []) {
        let ids = idsByObject.get(target);
        if (!ids) idsByObject.set(target, (ids = new Set()));
        ids.add(id);
      }
    }
  }
  const linked = new Map<string, RecordDocument>();
  await Promise.all(
    [...idsByObject].map(async ([target, ids]) => {
      for (const document of await ctx.readStore.getMany(ctx.workspaceId, target, [...ids])) linked.set(`${target}/${document.id}`, document);
    }),
  );
  return linked;
}
