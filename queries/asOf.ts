import { RECORD_STREAM_PREFIX, recordStream } from '../src/events/records.js';
import { ownCalculations, rollups } from '../src/schema/calculated.js';
import { NotFound, ValidationFailed } from '../src/core/errors.js';
import type { EventStore } from '../src/eventstore/port.js';
import type { Position } from '../src/eventstore/position.js';
import { filterKey, filterKeys } from '../src/schema/filterKey.js';
import type { FieldFilter, ReadStore, RecordDocument, Values } from '../src/readstore/port.js';
import { readableData } from './eventView.js';
import type { ObjectDef } from '../src/schema/types.js';
import { RecordFold } from './fold.js';
import { renderRecords, type ApiRecord, type RenderContext, type RenderDeps } from './recordFormat.js';
import { defaultObject, type Catalogue } from '../src/schema/catalogue.js';

/**
 * Reads as of a moment (`?as_of=`), answered from the log: a record's document is its own stream
 * folded up to that moment, with roll-ups from its children as they were then (found through the
 * link edges of the records read model, plus the children linked now) and date-dependent values
 * from the as_of date. Rendering (links, masking, lookups) is the same as GET's, over documents as of then.
 */

const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})$/;

/** A malformed moment, or one after `now`, is a 422 naming the parameter. */
export function parseAsOf(raw: string, now: Date): Date {
  const ms = ISO_DATE_TIME.test(raw) ? Date.parse(raw) : NaN;
  if (Number.isNaN(ms)) throw new ValidationFailed(`as_of must be an ISO 8601 date-time such as 2024-05-01T00:00:00Z, got "${raw}"`);
  if (ms > now.getTime()) throw new ValidationFailed(`as_of must not be in the future, got "${raw}"`);
  return new Date(ms);
}

export type AsOfDeps = Pick<ReadStore, 'linkSources' | 'find'> & { events: EventStore; catalogue?: Catalogue | undefined };

/** Documents of one workspace as of one moment, each folded once per reader. */
export class AsOfReader {
  private readonly cache = new Map<string, Promise<RecordDocument | null>>();

  constructor(
    private readonly deps: AsOfDeps,
    private readonly workspaceId: string,
    readonly at: Date,
  ) {}

  /** As GET's read store would have answered: only a live record of this workspace and object. */
  document(object: string, id: string): Promise<RecordDocument | null> {
    const key = `${object}/${id}`;
    let found = this.cache.get(key);
    if (!found) this.cache.set(key, (found = this.load(object, id)));
    return found;
  }

  async getMany(_workspaceId: string, object: string, ids: string[]): Promise<RecordDocument[]> {
    const found = await Promise.all([...new Set(ids)].map((id) => this.document(object, id)));
    return found.filter((document): document is RecordDocument => document !== null);
  }

  forget(): void {
    this.cache.clear();
  }

  private async load(object: string, id: string): Promise<RecordDocument | null> {
    const fold = new RecordFold();
    const until = this.at.getTime();
    for (const event of await this.deps.events.readStream(recordStream(id))) {
      if (event.created.getTime() > until) break;
      fold.add(event);
    }
    const folded = fold.result((key) => this.deps.catalogue?.object(key) ?? defaultObject(key)).document;
    if (!folded || folded.workspaceId !== this.workspaceId || folded.object !== object) return null;
    const rolledUp: Values = {};
    for (const rollup of rollups) {
      if (rollup.object !== object) continue;
      const children = await this.children(rollup.source, rollup.via, id);
      rolledUp[rollup.field] = rollup.compute(children.map((child) => ({ ...child.fields, ...child.calculated })));
    }
    return { ...folded, calculated: { ...rolledUp, ...ownCalculations(object, { ...folded.fields, ...rolledUp }) } };
  }

  /** Records of `source` whose `via` pointed at `parent` then: every record that ever linked it, or links it now. */
  private async children(source: string, via: string, parent: string): Promise<RecordDocument[]> {
    const ids = new Set(await this.deps.linkSources(this.workspaceId, source, via, parent));
    for (let offset = 0; ; offset += 1000) {
      const page = await this.deps.find({ workspaceId: this.workspaceId, object: source, filters: [{ field: via, value: filterKey(parent) }], limit: 1000, offset });
      for (const document of page.documents) ids.add(document.id);
      if (page.documents.length < 1000) break;
    }
    const documents = await this.getMany(this.workspaceId, source, [...ids]);
    return documents.filter((document) => document.fields[via] === parent);
  }
}

/** The render context of GET over documents as of the reader's moment: date-dependent values use its date. */
export function asOfRenderContext(ctx: RenderContext, reader: AsOfReader): RenderDeps {
  return { ...ctx, readStore: reader, today: reader.at.toISOString().slice(0, 10) };
}

/** GET /api/v1/{object}/{id}?as_of=: 404 before the record existed, after it was deleted, or never in this workspace. */
export async function getRecordAsOf(ctx: RenderContext, deps: AsOfDeps, object: ObjectDef, recordId: string, at: Date): Promise<ApiRecord> {
  const reader = new AsOfReader(deps, ctx.workspaceId, at);
  const document = await reader.document(object.key, recordId);
  if (!document) throw new NotFound(`${object.key} record ${recordId} not found`);
  const [record] = await renderRecords(object, [document], asOfRenderContext(ctx, reader));
  return record!;
}

export interface AsOfListQuery {
  filters: FieldFilter[];
  updatedSince: string | undefined;
  limit: number;
  offset: number;
}

const PAGE = 1000;

/**
 * GET /api/v1/{object}?as_of=: the records created up to the moment, in creation (log) order,
 * each folded as of then and filtered as the read store filters. It pages through the log's
 * record events and keeps only the answer's page in memory, never the workspace.
 */
export async function listRecordsAsOf(ctx: RenderContext, deps: AsOfDeps, object: ObjectDef, query: AsOfListQuery, at: Date): Promise<{ data: ApiRecord[]; total: number }> {
  const reader = new AsOfReader(deps, ctx.workspaceId, at);
  const page: RecordDocument[] = [];
  let total = 0;
  scan: for (let from: Position | 'start' = 'start'; ; ) {
    const events = await deps.events.readAll({ from, maxCount: PAGE, filter: { streamPrefixes: [RECORD_STREAM_PREFIX] } });
    if (events.length === 0) break;
    for (const event of events) {
      // Commit times never go backwards along the log: nothing after this was created by then.
      if (event.created > at) break scan;
      if (event.type !== 'RecordCreated') continue;
      const data = readableData(event);
      if (data['workspaceId'] !== ctx.workspaceId || data['object'] !== object.key) continue;
      const document = await reader.document(object.key, String(data['recordId']));
      reader.forget();
      if (!document || !matches(document, query)) continue;
      total += 1;
      if (total > query.offset && page.length < query.limit) page.push(document);
    }
    from = events.at(-1)!.position;
  }
  return { data: await renderRecords(object, page, asOfRenderContext(ctx, reader)), total };
}

/** The read store's filter rules (exact, case-insensitive, any element of a list; updatedSince strict). */
function matches(document: RecordDocument, query: AsOfListQuery): boolean {
  if (query.updatedSince !== undefined && !(Date.parse(document.updatedAt) > Date.parse(query.updatedSince))) return false;
  return query.filters.every((filter) => {
    const value = document.fields[filter.field] ?? document.calculated[filter.field] ?? null;
    return filterKeys(value).includes(filter.value);
  });
}
