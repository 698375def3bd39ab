import type { Values } from '../readstore/port.js';
import { DEFAULT_OBJECTS } from './defaultObjects.js';
import type { ObjectDef } from './types.js';

/**
 * The objects a workspace has. For now every workspace has exactly the default objects of spec
 * section 2.3; workspace-defined objects (a later issue) will be looked up by `workspaceId` here,
 * which is why the functions already take it.
 */

/** A Map, not an object literal: keys such as `__proto__` or `constructor` are simply unknown. */
const DEFAULTS_BY_KEY: ReadonlyMap<string, ObjectDef> = new Map(DEFAULT_OBJECTS.map((object) => [object.key, object]));

export function getObject(_workspaceId: string, key: string): ObjectDef | undefined {
  return DEFAULTS_BY_KEY.get(key);
}

export function listObjects(_workspaceId: string): readonly ObjectDef[] {
  return DEFAULT_OBJECTS;
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
export function uniqueFields(object: ObjectDef): string[] {
  return object.fields.filter((field) => field.format.type === 'autoNumber').map((field) => field.key);
}

/** `formatAutoNumber('CL-', 1)` is `CL-00001`; beyond 99999 the number simply gets longer. */
export function formatAutoNumber(prefix: string, n: number): string {
  if (!Number.isSafeInteger(n) || n < 1) throw new RangeError(`an auto number is a whole number from 1, got ${n}`);
  return `${prefix}${String(n).padStart(5, '0')}`;
}
