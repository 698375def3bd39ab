import type { StoredValue } from '../src/readstore/port.js';
import type { FieldDef } from '../src/schema/types.js';

/**
 * A stored value in the REST format of spec 2.2 for places that show single values rather than
 * whole records (history changes): links and people as { id, name }, a link to an object the
 * key cannot access as { id } only, exactly as GET shows them.
 */

export interface ValueNames {
  linkName(object: string, id: string): string | null;
  userName(id: string): string | null;
  canAccess(object: string): boolean;
}

export function restValue(field: FieldDef, value: StoredValue | undefined, names: ValueNames): unknown {
  const format = field.format;
  const link = (object: string, id: string) => (names.canAccess(object) ? { id, name: names.linkName(object, id) } : { id });
  switch (format.type) {
    case 'link':
      return typeof value === 'string' ? link(format.object, value) : null;
    case 'linkList':
      return Array.isArray(value) ? value.map((id) => link(format.object, id)) : [];
    case 'person':
      return typeof value === 'string' ? { id: value, name: names.userName(value) } : null;
    default:
      return value ?? null;
  }
}

/** Ids of the records a value links to, per linked object, and of the people it names. */
export function referencesOf(field: FieldDef, value: StoredValue | undefined, links: Map<string, Set<string>>, users: Set<string>): void {
  const format = field.format;
  if (format.type === 'person' && typeof value === 'string') users.add(value);
  if (format.type !== 'link' && format.type !== 'linkList') return;
  const ids = Array.isArray(value) ? value : typeof value === 'string' ? [value] : [];
  if (ids.length === 0) return;
  let set = links.get(format.object);
  if (!set) links.set(format.object, (set = new Set()));
  for (const id of ids) set.add(id);
}
