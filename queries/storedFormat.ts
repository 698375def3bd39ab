import type { RecordDocument, StoredRecord, Values } from '../src/readstore/port.js';
import { MARK, PART, shapeOf, SPLICE } from '../src/readstore/rendering.js';
import { timeDependentCalculations, timeInputs } from '../src/schema/calculated.js';
import type { ObjectDef } from '../src/schema/types.js';
import { renderRecords, type RenderDeps } from './recordFormat.js';

/**
 * Records as REST JSON text from their stored rendering (src/readstore/rendering.ts): the final
 * JSON is copied as it is, and only the splice points are filled in (link names masked as the
 * key's access says, people's names, lookups, today's date-relative values), with one query per
 * linked object for the whole page. A record without a usable rendering (projected before
 * renderings existed, or with another definition of its object than this process has) is
 * rendered from its document by renderRecords, as before: the answer is the same either way.
 */

export function renderStored(object: ObjectDef, records: StoredRecord[], ctx: RenderDeps): string[] | Promise<string[]> {
  const shape = shapeOf(object) + MARK;
  const parsed: (string[] | null)[] = [];
  const stale: RecordDocument[] = [];
  const linkedIds = new Map<string, Set<string>>();
  let persons = false;
  for (const record of records) {
    const rendered = record.rendered;
    if (rendered === null || !rendered.startsWith(shape)) {
      parsed.push(null);
      stale.push(documentOf(record));
      continue;
    }
    const parts = splitOn(rendered, MARK);
    parsed.push(parts);
    for (let at = 2; at < parts.length; at += 2) {
      const splice = parts[at]!;
      const kind = splice[0];
      if (kind === SPLICE.person) persons = true;
      else if (kind === SPLICE.link || kind === SPLICE.linkList || kind === SPLICE.lookup) {
        const [target, ...ids] = splitOn(splice.slice(1), PART);
        let known = linkedIds.get(target!);
        if (!known) linkedIds.set(target!, (known = new Set()));
        known.add(ids[0]!);
        if (kind === SPLICE.linkList) for (const id of ids.slice(1)) known.add(id);
      }
    }
  }

  // Most records need nothing read besides themselves: answered without a promise.
  if (linkedIds.size === 0 && !persons && stale.length === 0) return fillIn(object, records, parsed, ctx, NO_LINKED, undefined, []);
  return Promise.all([
    loadLinked(linkedIds, ctx),
    persons ? ctx.listUsers(ctx.workspaceId).then((users) => new Map(users.map((user) => [user.id, user.name]))) : undefined,
    stale.length > 0 ? renderRecords(object, stale, ctx) : [],
  ]).then(([linked, userNames, fallback]) => fillIn(object, records, parsed, ctx, linked, userNames, fallback));
}

/** The records' JSON: each rendering with its splice points filled in, or its fallback rendering. */
function fillIn(
  object: ObjectDef,
  records: StoredRecord[],
  parsed: (string[] | null)[],
  ctx: RenderDeps,
  linked: ReadonlyMap<string, RecordDocument>,
  userNames: ReadonlyMap<string, string> | undefined,
  fallback: unknown[],
): string[] {
  const linkRef = (target: string, id: string): string =>
    ctx.canAccess(target) ? `{"id":${JSON.stringify(id)},"name":${JSON.stringify(linked.get(`${target}/${id}`)?.name ?? null)}}` : `{"id":${JSON.stringify(id)}}`;

  let fallbackAt = 0;
  // Most records of a page have the same date-relative inputs (none set, or the same date): the
  // last ones are compared before the shared cache is asked (a key built and hashed per record).
  let lastInputs: string | undefined;
  let lastTimed: Record<string, string> | undefined;
  return parsed.map((parts, index) => {
    if (parts === null) return JSON.stringify(fallback[fallbackAt++]);
    let text = parts[1]!;
    let timed: Record<string, string> | undefined;
    for (let at = 2; at < parts.length; at += 2) {
      const splice = parts[at]!;
      const body = splice.slice(1);
      switch (splice[0]) {
        case SPLICE.person:
          text += `{"id":${JSON.stringify(body)},"name":${JSON.stringify(userNames?.get(body) ?? null)}}`;
          break;
        case SPLICE.link: {
          const [target, id] = splitOn(body, PART);
          text += linkRef(target!, id!);
          break;
        }
        case SPLICE.linkList: {
          const [target, ...ids] = splitOn(body, PART);
          text += `[${ids.map((id) => linkRef(target!, id)).join(',')}]`;
          break;
        }
        case SPLICE.lookup: {
          const [target, id, take] = splitOn(body, PART);
          text += JSON.stringify(linked.get(`${target}/${id}`)?.fields[take!] ?? null);
          break;
        }
        case SPLICE.timed: {
          const [field, inputs] = splitOn(body, PART);
          if (!timed && inputs !== undefined && inputs === lastInputs) timed = lastTimed;
          if (!timed) {
            const values = inputs === undefined ? valuesOf(documentOf(records[index]!)) : undefined;
            timed = timedValues(object.key, inputs, values, ctx.today);
            if (inputs !== undefined) {
              lastInputs = inputs;
              lastTimed = timed;
            }
          }
          text += timed[field!] ?? 'null';
          break;
        }
        default:
          throw new Error(`unknown splice point in a stored rendering: ${splice[0]}`);
      }
      text += parts[at + 1]!;
    }
    return text;
  });
}

/**
 * `text.split(separator)` for a one-character separator, by indexOf: String.prototype.split
 * goes through V8's runtime (and hashes the text for its cache), at about twice the cost on a
 * rendering, once per record of every page.
 */
function splitOn(text: string, separator: string): string[] {
  const parts: string[] = [];
  let from = 0;
  for (let at = text.indexOf(separator); at >= 0; at = text.indexOf(separator, from)) {
    parts.push(text.slice(from, at));
    from = at + 1;
  }
  parts.push(text.slice(from));
  return parts;
}

const valuesOf = (document: RecordDocument) => ({ ...document.fields, ...document.calculated });

function documentOf(record: StoredRecord): RecordDocument {
  if (!record.document) throw new Error(`record ${record.id} was read without its document, and its rendering needs it`);
  return record.document();
}

/**
 * The shape a list may ask findStored with: the records rendered with it then come without their
 * documents. None when the object's date-relative values are computed from the whole document.
 */
export function listShape(object: ObjectDef): string | undefined {
  if (listShapes.has(object)) return listShapes.get(object);
  const timedFromDocument = !timeInputs[object.key] && object.fields.some((field) => field.format.type === 'calculated' && field.format.timeDependent);
  const shape = timedFromDocument ? undefined : shapeOf(object) + MARK;
  listShapes.set(object, shape);
  return shape;
}

/** Per object definition (a new definition is a new object): asked on every GET and list. */
const listShapes = new WeakMap<ObjectDef, string | undefined>();

/**
 * Date-relative values as JSON text, per field. Those computed from a few inputs are remembered
 * per (object, inputs, day): most records of a page share them (no renewal date, or the same).
 */
const timedCache = new Map<string, Record<string, string>>();
const TIMED_CACHE_SIZE = 10_000;

function timedValues(object: string, inputs: string | undefined, values: Values | undefined, today: string): Record<string, string> {
  const key = inputs === undefined ? undefined : `${object}${PART}${today}${PART}${inputs}`;
  const known = key === undefined ? undefined : timedCache.get(key);
  if (known) return known;
  const computed = timeDependentCalculations(object, values ?? (JSON.parse(inputs!) as Values), today);
  const texts: Record<string, string> = {};
  for (const [field, value] of Object.entries(computed)) texts[field] = JSON.stringify(value ?? null);
  if (key !== undefined) {
    if (timedCache.size >= TIMED_CACHE_SIZE) timedCache.clear();
    timedCache.set(key, texts);
  }
  return texts;
}

const NO_LINKED: ReadonlyMap<string, RecordDocument> = new Map();

/** The linked records of a page, one query per linked object. */
async function loadLinked(idsByObject: Map<string, Set<string>>, ctx: RenderDeps): Promise<ReadonlyMap<string, RecordDocument>> {
  const linked = new Map<string, RecordDocument>();
  if (idsByObject.size === 0) return NO_LINKED;
  await Promise.all(
    [...idsByObject].map(async ([target, ids]) => {
      for (const document of await ctx.readStore.getMany(ctx.workspaceId, target, [...ids])) linked.set(`${target}/${document.id}`, document);
    }),
  );
  return linked;
}
