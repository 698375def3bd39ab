import { isSealed, openValue, sealValue } from './vault.js';

/**
 * Where personal values sit in the events that carry them, sealed on append and opened on read.
 * Record events carry field values (created and deleted: `fields`; updated: each change's `from`
 * and `to`); reservation events carry the normalised values of the key they reserve (for contacts,
 * the name). Everything else in an event (ids, links, times) stays readable to auditors.
 */

type Data = Record<string, unknown>;

const FIELD_EVENTS = new Set(['RecordCreated', 'RecordDeleted']);
const RESERVATION_EVENTS = new Set(['ValueReserved', 'ValueReleased']);
/** The field name reservation key values are sealed under. */
const RESERVATION_FIELD = '$key';

export function recordIdOf(data: Data): string | null {
  return typeof data['recordId'] === 'string' ? data['recordId'] : null;
}

/** Whether this event may hold values of these personal fields (so needs the record's key). */
export function holdsPersonal(type: string, data: Data, personal: ReadonlySet<string>): boolean {
  if (personal.size === 0 || recordIdOf(data) === null) return false;
  if (FIELD_EVENTS.has(type)) return Object.entries((data['fields'] ?? {}) as Data).some(([k, v]) => personal.has(k) && v !== null && v !== undefined);
  if (type === 'RecordUpdated') return Object.keys((data['changes'] ?? {}) as Data).some((k) => personal.has(k));
  if (RESERVATION_EVENTS.has(type)) return reservationFields(data).some((k) => personal.has(k));
  return false;
}

function reservationFields(data: Data): string[] {
  const key = data['key'] as { fields?: unknown } | undefined;
  return Array.isArray(key?.fields) ? (key.fields as string[]) : [];
}

export function sealData(type: string, data: Data, personal: ReadonlySet<string>, key: Buffer): Data {
  const id = recordIdOf(data)!;
  const sealIf = (field: string, value: unknown) => (personal.has(field) && value !== null && value !== undefined && !isSealed(value) ? sealValue(key, id, field, value) : value);
  if (FIELD_EVENTS.has(type)) {
    const fields = Object.fromEntries(Object.entries((data['fields'] ?? {}) as Data).map(([k, v]) => [k, sealIf(k, v)]));
    return { ...data, fields };
  }
  if (type === 'RecordUpdated') {
    const changes = Object.fromEntries(
      Object.entries((data['changes'] ?? {}) as Record<string, { from: unknown; to: unknown }>).map(([k, c]) => [k, { ...c, from: sealIf(k, c.from), to: sealIf(k, c.to) }]),
    );
    return { ...data, changes };
  }
  if (RESERVATION_EVENTS.has(type)) {
    const reserved = data['key'] as Data;
    return { ...data, key: { ...reserved, values: sealValue(key, id, RESERVATION_FIELD, reserved['values']) } };
  }
  return data;
}

/** Whether the stored data holds any sealed value (so that reading it needs its record's key). */
export function hasSealed(type: string, data: Data): boolean {
  if (FIELD_EVENTS.has(type)) return Object.values((data['fields'] ?? {}) as Data).some(isSealed);
  if (type === 'RecordUpdated') return Object.values((data['changes'] ?? {}) as Record<string, { from: unknown; to: unknown }>).some((c) => isSealed(c.from) || isSealed(c.to));
  if (RESERVATION_EVENTS.has(type)) return isSealed((data['key'] as Data | undefined)?.['values']);
  return false;
}

/**
 * The data with its sealed values opened with `key`; values that do not open (their key was
 * deleted) read as null, and their fields are listed in `erased`.
 */
export function openData(type: string, data: Data, key: Buffer | undefined): Data {
  const id = recordIdOf(data)!;
  const erased = new Set<string>();
  const openIf = (field: string, value: unknown) => {
    if (!isSealed(value)) return value;
    const opened = openValue(key, id, field, value);
    if (opened !== undefined) return opened;
    erased.add(field);
    return null;
  };
  let opened: Data = data;
  if (FIELD_EVENTS.has(type)) {
    opened = { ...data, fields: Object.fromEntries(Object.entries((data['fields'] ?? {}) as Data).map(([k, v]) => [k, openIf(k, v)])) };
  } else if (type === 'RecordUpdated') {
    const changes = Object.entries((data['changes'] ?? {}) as Record<string, { from: unknown; to: unknown }>).map(([k, c]) => [k, { ...c, from: openIf(k, c.from), to: openIf(k, c.to) }]);
    opened = { ...data, changes: Object.fromEntries(changes) };
  } else if (RESERVATION_EVENTS.has(type)) {
    const reserved = data['key'] as Data;
    const values = openIf(RESERVATION_FIELD, reserved['values']);
    opened = { ...data, key: { ...reserved, values: values ?? [] } };
    erased.clear();
  }
  if (erased.size === 0) return opened;
  const before = Array.isArray(data['erased']) ? (data['erased'] as string[]) : [];
  return { ...opened, erased: [...new Set([...before, ...erased])] };
}
