import { createHash } from 'node:crypto';
import { lookups, timeInputs } from '../schema/calculated.js';
import type { ObjectDef } from '../schema/types.js';
import type { RecordDocument, StoredValue } from './port.js';

/**
 * A record's REST JSON (spec 2.2, as queries/recordFormat.ts renders it) made once, when the
 * records projection writes the document, so that a read is a string concatenation instead of a
 * JSON.parse of the document and a JSON.stringify of the answer.
 *
 * What depends on anything but the document itself is left as a splice point, filled at read time
 * (queries/storedFormat.ts): links and link lists (the linked record's name, and whether the key
 * may see it), people (the user's name), lookups (a field of the linked record) and the calculated
 * values that depend on today's date. Everything else is final JSON text.
 *
 * The form: `<shape>` MARK `<json>` (MARK `<splice>` MARK `<json>`)*. `<shape>` names the object
 * definition it was rendered with; a reader with another definition (a field added, removed or
 * changed since) renders from the document instead. JSON text never holds MARK or PART (JSON.stringify
 * escapes control characters), so splitting on them is exact.
 */

export const MARK = '\u0001';
/** Separates the parts of one splice point. */
export const PART = '\u0002';

/** Raised when the rendering itself changes, so that documents rendered by an older release are not used. */
const FORMAT = 'r1';

const shapes = new WeakMap<ObjectDef, string>();

/** A short digest of what rendering reads of the object's definition. */
export function shapeOf(object: ObjectDef): string {
  let shape = shapes.get(object);
  if (shape !== undefined) return shape;
  const fields = object.fields.map(({ key, format }) => {
    const target = format.type === 'link' || format.type === 'linkList' ? format.object : '';
    const timed = format.type === 'calculated' && format.timeDependent ? '!' : '';
    return `${key}:${format.type}:${target}${timed}`;
  });
  const own = lookups.filter((lookup) => lookup.object === object.key).map((lookup) => `${lookup.field}<${lookup.via}.${lookup.take}`);
  shape = FORMAT + createHash('sha1').update(JSON.stringify([object.key, fields, own])).digest('base64url').slice(0, 16);
  shapes.set(object, shape);
  return shape;
}

/**
 * JSON of the few values the object's date-relative values are computed from (schema timeInputs),
 * kept in their splice so that a read computes them without parsing the document; null: the
 * object's may read any value, and a read takes them from the document.
 */
function timedInputsOf(object: string, document: RecordDocument): string | null {
  const inputs = timeInputs[object];
  if (!inputs) return null;
  const picked: Record<string, StoredValue> = {};
  for (const key of inputs) {
    // As in {...fields, ...calculated}, which is what the calculations are given.
    const value = key in document.calculated ? document.calculated[key] : document.fields[key];
    if (value !== undefined) picked[key] = value;
  }
  return JSON.stringify(picked);
}

/** Splice point kinds (the first character of a splice). */
export const SPLICE = { person: 'p', link: 'l', linkList: 'L', lookup: 'k', timed: 't' } as const;

type Piece = { json: string } | { splice: string };

/** The stored rendering of `document` with `object`'s definition; null when a value cannot be spliced safely (read time renders it then). */
export function renderTemplate(object: ObjectDef, document: RecordDocument): string | null {
  // A plain object, assigned in renderRecords' order: its keys then come out in the same order.
  const pieces: Record<string, Piece> = {};
  const json = (value: unknown): Piece => ({ json: JSON.stringify(value) });
  let unsafe = false;
  // Ids and keys are plain text; one holding a separator is rendered at read time instead.
  const splice = (kind: string, parts: string[]): Piece => {
    if (parts.some((part) => part.includes(MARK) || part.includes(PART))) unsafe = true;
    return { splice: kind + parts.join(PART) };
  };
  pieces['id'] = json(document.id);
  const timed = timedInputsOf(object.key, document);
  for (const field of object.fields) {
    const value = document.fields[field.key] ?? null;
    const format = field.format;
    switch (format.type) {
      case 'link':
        pieces[field.key] = typeof value === 'string' ? splice(SPLICE.link, [format.object, value]) : json(null);
        break;
      case 'linkList':
        pieces[field.key] = Array.isArray(value) && value.length > 0 ? splice(SPLICE.linkList, [format.object, ...value]) : json([]);
        break;
      case 'person':
        pieces[field.key] = typeof value === 'string' ? splice(SPLICE.person, [value]) : json(null);
        break;
      case 'files':
        pieces[field.key] = json([]);
        break;
      case 'calculated':
        pieces[field.key] = format.timeDependent ? splice(SPLICE.timed, timed === null ? [field.key] : [field.key, timed]) : json(document.calculated[field.key] ?? null);
        break;
      default:
        pieces[field.key] = json(value);
    }
  }
  for (const lookup of lookups) {
    if (lookup.object !== object.key) continue;
    const format = object.fields.find((field) => field.key === lookup.via)?.format;
    const linkedId: StoredValue | undefined = document.fields[lookup.via];
    const spliced = format?.type === 'link' && typeof linkedId === 'string';
    pieces[lookup.field] = spliced ? splice(SPLICE.lookup, [format.object, linkedId, lookup.take]) : json(null);
  }
  pieces['id'] = json(document.id);
  pieces['createdAt'] = json(document.createdAt);
  pieces['updatedAt'] = json(document.updatedAt);
  if (unsafe) return null;

  let out = shapeOf(object);
  let text = '{';
  let first = true;
  for (const [key, piece] of Object.entries(pieces)) {
    text += (first ? '' : ',') + JSON.stringify(key) + ':';
    first = false;
    if ('json' in piece) {
      text += piece.json;
      continue;
    }
    out += MARK + text + MARK + piece.splice;
    text = '';
  }
  return out + MARK + text + '}';
}
