import { NotFound } from '../src/core/errors.js';
import type { StoredRecord } from '../src/readstore/port.js';
import type { ObjectDef } from '../src/schema/types.js';
import { renderRecords, type ApiRecord, type RenderContext } from './recordFormat.js';
import { listShape, renderStored } from './storedFormat.js';

/** GET /api/v1/{object}/{id} (spec 4.3). */
export async function getRecord(ctx: RenderContext, object: ObjectDef, recordId: string): Promise<ApiRecord> {
  return (await getRecordAt(ctx, object, recordId)).record;
}

/** The record and its revision (its ETag, docs/sync-clients.md), read together. */
export async function getRecordAt(ctx: RenderContext, object: ObjectDef, recordId: string): Promise<{ record: ApiRecord; revision: number }> {
  const document = await ctx.readStore.get(ctx.workspaceId, object.key, recordId);
  if (!document) throw new NotFound(`${object.key} record ${recordId} not found`);
  const [record] = await renderRecords(object, [document], ctx);
  return { record: record!, revision: document.revision };
}

/** A record's JSON text and the revision it was rendered at (undefined from a store that does not say). */
export interface RecordJson {
  json: string;
  revision: number | undefined;
}

/**
 * The same record as JSON text, from its stored rendering where it has one (queries/storedFormat.ts).
 * A string when neither the store nor the rendering had to wait for anything (the usual GET on
 * the embedded store: no promise made), else its promise.
 */
export function getRecordJson(ctx: RenderContext, object: ObjectDef, recordId: string): RecordJson | Promise<RecordJson> {
  const shape = listShape(object);
  const now = ctx.readStore.getStoredNow(ctx.workspaceId, object.key, recordId, shape);
  if (now === undefined) return ctx.readStore.getStored(ctx.workspaceId, object.key, recordId, shape).then((stored) => rendered(ctx, object, recordId, stored));
  return rendered(ctx, object, recordId, now);
}

function rendered(ctx: RenderContext, object: ObjectDef, recordId: string, stored: StoredRecord | null): RecordJson | Promise<RecordJson> {
  if (!stored) throw new NotFound(`${object.key} record ${recordId} not found`);
  const json = renderStored(object, [stored], ctx);
  const { revision } = stored;
  return Array.isArray(json) ? { json: json[0]!, revision } : json.then(([first]) => ({ json: first!, revision }));
}
