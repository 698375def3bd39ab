import { NotFound } from '../src/core/errors.js';
import type { ObjectDef } from '../src/schema/types.js';
import { renderRecords, type ApiRecord, type RenderContext } from './recordFormat.js';

/** GET /api/v1/{object}/{id} (spec 4.3). */
export async function getRecord(ctx: RenderContext, object: ObjectDef, recordId: string): Promise<ApiRecord> {
  const document = await ctx.readStore.get(ctx.workspaceId, object.key, recordId);
  if (!document) throw new NotFound(`${object.key} record ${recordId} not found`);
  const [record] = await renderRecords(object, [document], ctx);
  return record!;
}
