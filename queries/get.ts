import { NotFound } from '../src/core/errors.js';
import type { ObjectDef } from '../src/schema/types.js';
import { renderRecords, type ApiRecord, type RenderContext } from './recordFormat.js';
import { renderStored } from './storedFormat.js';

/** GET /api/v1/{object}/{id} (spec 4.3). */
export async function getRecord(ctx: RenderContext, object: ObjectDef, recordId: string): Promise<ApiRecord> {
  const document = await ctx.readStore.get(ctx.workspaceId, object.key, recordId);
  if (!document) throw new NotFound(`${object.key} record ${recordId} not found`);
  const [record] = await renderRecords(object, [document], ctx);
  return record!;
}

/** The same record as JSON text, from its stored rendering where it has one (queries/storedFormat.ts). */
export async function getRecordJson(ctx: RenderContext, object: ObjectDef, recordId: string): Promise<string> {
  const stored = await ctx.readStore.getStored(ctx.workspaceId, object.key, recordId);
  if (!stored) throw new NotFound(`${object.key} record ${recordId} not found`);
  const [json] = await renderStored(object, [stored], ctx);
  return json!;
}
