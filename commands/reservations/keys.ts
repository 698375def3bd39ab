import { hash } from 'node:crypto';
import type { Values } from '../../src/readstore/port.js';
import { filterKey } from '../../src/schema/filterKey.js';
import { recordName, uniqueFields } from '../../src/schema/catalogue.js';
import type { ObjectDef } from '../../src/schema/types.js';

/**
 * A reservation key: what an upsert matches on (the record name, the unique fields sent, or the
 * fields of ?match=) with its normalised value. Each key value has a reservation stream of its own
 * in the log, so that "who holds it" is decided by an append with an expected revision, the one
 * thing an event store guarantees across concurrent writers (also on EventStoreDB).
 */
export interface ReservationKey {
  /** 'name': the record name of PRODUCT.md (several name fields for contacts); 'fields': field values. */
  kind: 'name' | 'fields';
  fields: string[];
  /** Normalised as filters compare (exact, case-insensitive): one per field, or the name. */
  values: string[];
}

export const RESERVATION_STREAM_PREFIX = 'reservation-';

/** The stream of one key value; hashed, as values may be long or hold any character. */
export function reservationStream(workspaceId: string, object: string, key: ReservationKey): string {
  // One-shot hash: no Hash object per key (a create names two streams or more).
  const digest = hash('sha256', JSON.stringify([key.kind, key.fields, key.values]), 'hex').slice(0, 40);
  return `${RESERVATION_STREAM_PREFIX}${workspaceId}-${object}-${digest}`;
}

export function nameKey(object: ObjectDef, fields: Values): ReservationKey | null {
  if (!object.matchByName) return null;
  const name = recordName(object, fields);
  return name === null ? null : { kind: 'name', fields: [...object.nameFields], values: [filterKey(name)] };
}

/** The key of `fields` over the given field keys; null when one of them has no single value. */
export function fieldsKey(keys: string[], fields: Values): ReservationKey | null {
  const values: string[] = [];
  for (const key of keys) {
    const value = fields[key];
    if (value === undefined || value === null || Array.isArray(value)) return null;
    values.push(filterKey(value));
  }
  return { kind: 'fields', fields: [...keys], values };
}

export function sameKey(a: ReservationKey, b: ReservationKey): boolean {
  return a.kind === b.kind && a.fields.join('\u0000') === b.fields.join('\u0000') && a.values.join('\u0000') === b.values.join('\u0000');
}

/** Whether a record's fields still have the key's value (a holder renamed away no longer holds it). */
export function recordHasKey(object: ObjectDef, key: ReservationKey, fields: Values): boolean {
  const own = key.kind === 'name' ? nameKey(object, fields) : fieldsKey(key.fields, fields);
  return own !== null && sameKey(own, key);
}

/**
 * The keys a record holds whatever request made it: its name (objects matched by name) and each
 * unique (auto-number) value. A rename or delete releases them. Keys of `?match=` on other fields
 * are held by the record created with them, and are found stale by the next claimant once the
 * record no longer has that value.
 */
export function heldKeys(object: ObjectDef, fields: Values): ReservationKey[] {
  const keys: ReservationKey[] = [];
  const name = nameKey(object, fields);
  if (name) keys.push(name);
  for (const field of uniqueFields(object)) {
    const key = fieldsKey([field], fields);
    if (key) keys.push(key);
  }
  return keys;
}

/** Unique keys must be held by one record: a taken one fails the write. A name is held when free. */
export function isUniqueKey(object: ObjectDef, key: ReservationKey): boolean {
  return key.kind === 'fields' && key.fields.length === 1 && uniqueFields(object).includes(key.fields[0]!);
}
