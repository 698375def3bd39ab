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
export function timedInputsOf(object: string, document: RecordDocument): string | null {
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

/**
 * One key of the rendering, in the order a plain object assigned in renderRecords' order gives
 * (integer-like keys first, a repeated key where it was first assigned, the last value kept):
 * worked out once per object definition, so that a rendering assigns no object of pieces and
 * quotes no key. Every value is still computed in the original order, overwritten ones included
 * (any of them can make the rendering unsafe).
 */
type Unslotted =
  | { kind: 'id' | 'createdAt' | 'updatedAt' }
  | { kind: 'field'; field: ObjectDef['fields'][number] }
  | { kind: 'lookup'; lookup: (typeof lookups)[number]; format: ObjectDef['fields'][number]['format'] | undefined };
type Step = Unslotted & { slot: number };

interface Plan {
  steps: Step[];
  /** Per slot: `,"key":` (no comma for the first). */
  prefixes: string[];
  timed: boolean;
}

const plans = new WeakMap<ObjectDef, Plan>();

function planOf(object: ObjectDef): Plan {
  let plan = plans.get(object);
  if (plan) return plan;
  const order: Record<string, true> = {};
  const keyed: { key: string; step: Unslotted }[] = [];
  const add = (key: string, step: Unslotted) => {
    order[key] = true;
    keyed.push({ key, step });
  };
  add('id', { kind: 'id' });
  for (const field of object.fields) add(field.key, { kind: 'field', field });
  for (const lookup of lookups) {
    if (lookup.object === object.key) add(lookup.field, { kind: 'lookup', lookup, format: object.fields.find((field) => field.key === lookup.via)?.format });
  }
  add('id', { kind: 'id' });
  add('createdAt', { kind: 'createdAt' });
  add('updatedAt', { kind: 'updatedAt' });
  // Object.keys of the same assignments: the order (and the keys, `__proto__` left out) the pieces had.
  const keys = Object.keys(order);
  const slots = new Map(keys.map((key, at) => [key, at]));
  plan = {
    steps: keyed.map(({ key, step }): Step => ({ ...step, slot: slots.get(key) ?? -1 })),
    prefixes: keys.map((key, at) => (at === 0 ? '' : ',') + JSON.stringify(key) + ':'),
    timed: object.fields.some((field) => field.format.type === 'calculated' && field.format.timeDependent),
  };
  plans.set(object, plan);
  return plan;
}

/** Ids and keys are plain text; one holding a separator is rendered at read time instead. */
const unsafePart = (part: string) => part.includes(MARK) || part.includes(PART);

/** The stored rendering of `document` with `object`'s definition; null when a value cannot be spliced safely (read time renders it then). */
export function renderTemplate(object: ObjectDef, document: RecordDocument): string | null {
  const plan = planOf(object);
  // Per slot: final JSON text, or a splice (kind and parts).
  const values: string[] = new Array(plan.prefixes.length);
  const spliced: boolean[] = new Array(plan.prefixes.length).fill(false);
  let unsafe = false;
  const splice = (slot: number, kind: string, parts: string[]) => {
    if (parts.some(unsafePart)) unsafe = true;
    if (slot < 0) return;
    values[slot] = kind + parts.join(PART);
    spliced[slot] = true;
  };
  const json = (slot: number, value: unknown) => {
    if (slot < 0) return;
    values[slot] = JSON.stringify(value);
    spliced[slot] = false;
  };
  const timed = plan.timed ? timedInputsOf(object.key, document) : null;
  for (const step of plan.steps) {
    const slot = step.slot;
    switch (step.kind) {
      case 'id':
        json(slot, document.id);
        break;
      case 'createdAt':
        json(slot, document.createdAt);
        break;
      case 'updatedAt':
        json(slot, document.updatedAt);
        break;
      case 'lookup': {
        const linkedId: StoredValue | undefined = document.fields[step.lookup.via];
        if (step.format?.type === 'link' && typeof linkedId === 'string') splice(slot, SPLICE.lookup, [step.format.object, linkedId, step.lookup.take]);
        else json(slot, null);
        break;
      }
      case 'field': {
        const { key, format } = step.field;
        const value = document.fields[key] ?? null;
        switch (format.type) {
          case 'link':
            if (typeof value === 'string') splice(slot, SPLICE.link, [format.object, value]);
            else json(slot, null);
            break;
          case 'linkList':
            if (Array.isArray(value) && value.length > 0) splice(slot, SPLICE.linkList, [format.object, ...value]);
            else json(slot, []);
            break;
          case 'person':
            if (typeof value === 'string') splice(slot, SPLICE.person, [value]);
            else json(slot, null);
            break;
          case 'files':
            json(slot, []);
            break;
          case 'calculated':
            if (format.timeDependent) splice(slot, SPLICE.timed, timed === null ? [key] : [key, timed]);
            else json(slot, document.calculated[key] ?? null);
            break;
          default:
            json(slot, value);
        }
      }
    }
  }
  if (unsafe) return null;

  let out = shapeOf(object);
  let text = '{';
  for (let slot = 0; slot < values.length; slot++) {
    text += plan.prefixes[slot];
    if (!spliced[slot]) {
      text += values[slot];
      continue;
    }
    out += MARK + text + MARK + values[slot];
    text = '';
  }
  return out + MARK + text + '}';
}
