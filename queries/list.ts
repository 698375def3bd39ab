import { ValidationFailed } from '../src/core/errors.js';
import type { FieldFilter } from '../src/readstore/port.js';
import type { ObjectDef } from '../src/schema/types.js';
import { parseFilterValue } from '../src/schema/validate.js';
import { listRecordsAsOf, parseAsOf, type AsOfDeps } from './asOf.js';
import { DEFAULT_LIMIT, integerParameter, MAX_LIMIT } from './paging.js';
import type { ApiRecord, RenderContext } from './recordFormat.js';
import { listShape, renderStored } from './storedFormat.js';
import { momentProblem, parseMoment } from '../src/schema/dates.js';

/** GET /api/v1/{object} (spec 4.1): filters, updated_since, creation order, limit/offset, total. */

export interface ListPage {
  data: ApiRecord[];
  total: number;
  limit: number;
  offset: number;
}


/**
 * The page as JSON text (a ListPage, keys in its order): the records' stored renderings joined
 * (queries/storedFormat.ts). `?as_of=` pages are rendered from the log (queries/asOf.ts).
 * `asOf`: what `?as_of=` needs; without it the parameter is unknown.
 */
export async function listRecordsJson(
  ctx: RenderContext,
  object: ObjectDef,
  query: Record<string, string[]>,
  asOf?: AsOfDeps & { now: Date },
): Promise<string> {
  const { at, filters, updatedSince, limit, offset } = listParameters(object, query, asOf);
  if (at && asOf) return JSON.stringify({ ...(await listRecordsAsOf(ctx, asOf, object, { filters, updatedSince, limit, offset }, at)), limit, offset });
  const found = await ctx.readStore.findStored({ workspaceId: ctx.workspaceId, object: object.key, filters, updatedSince, limit, offset }, listShape(object));
  const data = await renderStored(object, found.records, ctx);
  return `{"data":[${data.join(',')}],"total":${found.total},"limit":${limit},"offset":${offset}}`;
}

interface ListParameters {
  at: Date | undefined;
  filters: FieldFilter[];
  updatedSince: string | undefined;
  limit: number;
  offset: number;
}

function listParameters(object: ObjectDef, query: Record<string, string[]>, asOf?: AsOfDeps & { now: Date }): ListParameters {
  let limit = DEFAULT_LIMIT;
  let offset = 0;
  let updatedSince: string | undefined;
  let at: Date | undefined;
  const filters: FieldFilter[] = [];

  for (const [name, values] of Object.entries(query)) {
    if (values.length !== 1) throw new ValidationFailed(`query parameter '${name}' is given ${values.length} times; give it once`);
    const raw = values[0]!;
    if (name === 'limit') limit = integerParameter(name, raw, 1, MAX_LIMIT);
    else if (name === 'offset') offset = integerParameter(name, raw, 0, Number.MAX_SAFE_INTEGER);
    else if (name === 'updated_since') updatedSince = dateTimeParameter(name, raw);
    else if (name === 'as_of' && asOf) at = parseAsOf(raw, asOf.now);
    else {
      const field = object.fields.find((candidate) => candidate.key === name);
      if (!field) throw new ValidationFailed(`unknown query parameter '${name}': not a field of ${object.key} (nor limit, offset, updated_since, as_of)`);
      const parsed = parseFilterValue(field, raw);
      if (!parsed.ok) throw new ValidationFailed(parsed.message);
      filters.push({ field: name, value: parsed.key });
    }
  }
  return { at, filters, updatedSince, limit, offset };
}

function dateTimeParameter(name: string, raw: string): string {
  const parsed = parseMoment(raw);
  if (!parsed.ok) throw new ValidationFailed(momentProblem(name, raw, parsed.problem));
  return parsed.at.toISOString();
}
