import type { Values } from './values.js';
import { DEFAULT_OBJECTS } from './defaultObjects.js';
import { EMPTY_SCHEMA, type SchemaState } from './schemaEvents.js';
import type { FieldDef, ObjectDef } from './types.js';

/**
 * The objects a workspace has: the default objects of spec section 2.3 plus that workspace's
 * own objects and fields (./schemaEvents.ts), built once per schema version and shared (frozen)
 * by every request until the next schema event (./catalogues.ts caches it).
 */

export interface Catalogue {
  workspaceId: string;
  /** Revision of the workspace stream it was built from (-1: nothing yet). */
  revision: number;
  objects: readonly ObjectDef[];
  /** A Map lookup: keys such as `__proto__` or `constructor` are simply unknown. */
  object(key: string): ObjectDef | undefined;
}

/** A Map, not an object literal: keys such as `__proto__` or `constructor` are simply unknown. */
const DEFAULTS_BY_KEY: ReadonlyMap<string, ObjectDef> = new Map(DEFAULT_OBJECTS.map((object) => [object.key, object]));

/** A default object (spec 2.3) without a workspace's additions. */
export function defaultObject(key: string): ObjectDef | undefined {
  return DEFAULTS_BY_KEY.get(key);
}

export function buildCatalogue(workspaceId: string, state: SchemaState = EMPTY_SCHEMA): Catalogue {
  const active = (object: string) => state.fields.filter((field) => field.object === object && field.active).map((field) => field.def);
  const inactive = (object: string) => state.fields.filter((field) => field.object === object && !field.active).map((field) => field.def);
  const withAdditions = (object: ObjectDef): ObjectDef => {
    const added = active(object.key);
    const gone = inactive(object.key);
    if (added.length === 0 && gone.length === 0) return object;
    return Object.freeze({ ...object, fields: Object.freeze([...object.fields, ...added]), inactiveFields: Object.freeze(gone) });
  };
  const objects: ObjectDef[] = DEFAULT_OBJECTS.map(withAdditions);
  for (const custom of state.objects) {
    objects.push(
      Object.freeze({
        key: custom.key,
        label: custom.label,
        fields: Object.freeze(active(custom.key)),
        inactiveFields: Object.freeze(inactive(custom.key)),
        nameFields: Object.freeze([custom.nameField]),
        matchByName: true,
        custom: true,
      }),
    );
  }
  const byKey = new Map(objects.map((object) => [object.key, object]));
  return Object.freeze({ workspaceId, revision: state.revision, objects: Object.freeze(objects), object: (key: string) => byKey.get(key) });
}

/**
 * The record name (PRODUCT.md section 3): the object's name fields that hold a value, each
 * trimmed, joined with one space; null when that leaves nothing. (Trimming each part means
 * "Ann " + "Lee" is named "Ann Lee", as a user typing the name would expect.)
 */
export function recordName(object: ObjectDef, fields: Values): string | null {
  const parts: string[] = [];
  for (const key of object.nameFields) {
    const value = fields[key];
    const part = typeof value === 'string' || typeof value === 'number' ? String(value).trim() : '';
    if (part !== '') parts.push(part);
  }
  return parts.length === 0 ? null : parts.join(' ');
}

/** The unique fields: the auto-number fields (PRODUCT.md section 3). */
const uniques = new WeakMap<ObjectDef, string[]>();

/** Worked out once per definition (a definition is never changed, only replaced): every create asks twice. */
export function uniqueFields(object: ObjectDef): string[] {
  let fields = uniques.get(object);
  if (fields === undefined) uniques.set(object, (fields = object.fields.filter((field) => field.format.type === 'autoNumber').map((field) => field.key)));
  return fields;
}

/** `formatAutoNumber('CL-', 1)` is `CL-00001`; beyond 99999 the number simply gets longer. */
export function formatAutoNumber(prefix: string, n: number): string {
  if (!Number.isSafeInteger(n) || n < 1) throw new RangeError(`an auto number is a whole number from 1, got ${n}`);
  return `${prefix}${String(n).padStart(5, '0')}`;
}

export type { FieldDef, ObjectDef };
