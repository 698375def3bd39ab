import { open, seal } from './cipher.js';
import { isSealed, type SealedValue } from './vault.js';

/**
 * Where personal values sit in the events that carry them, sealed on append and opened on read.
 * Record events carry field values (created and deleted: `fields`; updated: each change's `from`
 * and `to`); reservation events carry the normalised values of the key they reserve (for contacts,
 * the name). Everything else in an event (ids, links, times) stays readable to auditors.
 *
 * All personal values of one event are sealed in one box (`$sealed`, a JSON object of path ->
 * value), each value's place holding the marker `{ "$pd": "<path>" }`: one cipher operation per
 * event rather than per value, which is most of what sealing costs.
 */

type Data = Record<string, unknown>;

const FIELD_EVENTS = new Set(['RecordCreated', 'RecordDeleted']);
const RESERVATION_EVENTS = new Set(['ValueReserved', 'ValueReleased']);
const BOX = '$sealed';

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

/** Visits every place of the event that may hold a personal value, with the field it belongs to. */
function mapValues(type: string, data: Data, each: (field: string, path: string, value: unknown) => unknown): Data {
  if (FIELD_EVENTS.has(type)) {
    const fields = Object.fromEntries(Object.entries((data['fields'] ?? {}) as Data).map(([k, v]) => [k, each(k, `f.${k}`, v)]));
    return { ...data, fields };
  }
  if (type === 'RecordUpdated') {
    const changes = Object.entries((data['changes'] ?? {}) as Record<string, { from: unknown; to: unknown }>).map(([k, c]) => [k, { ...c, from: each(k, `c.${k}.f`, c.from), to: each(k, `c.${k}.t`, c.to) }]);
    return { ...data, changes: Object.fromEntries(changes) };
  }
  if (RESERVATION_EVENTS.has(type)) {
    const reserved = data['key'] as Data;
    const personal = reservationFields(data).length > 0;
    return personal ? { ...data, key: { ...reserved, values: each('$key', 'k', reserved['values']) } } : data;
  }
  return data;
}

const aadOf = (data: Data) => `${recordIdOf(data)}/event`;

export function sealData(type: string, data: Data, personal: ReadonlySet<string>, key: Buffer): Data {
  const box: Record<string, unknown> = {};
  const reservation = RESERVATION_EVENTS.has(type);
  const marked = mapValues(type, data, (field, path, value) => {
    if (value === null || value === undefined || isSealed(value)) return value;
    if (!reservation && !personal.has(field)) return value;
    box[path] = value;
    return { $pd: path } satisfies SealedValue;
  });
  if (Object.keys(box).length === 0) return data;
  // A legacy event re-encrypted later may already hold a box: its values are kept beside the new ones.
  const previous = typeof data[BOX] === 'string' ? (openBox(data, key) ?? {}) : {};
  return { ...marked, [BOX]: seal(key, Buffer.from(JSON.stringify({ ...previous, ...box }), 'utf8'), aadOf(data)).toString('base64') };
}

function openBox(data: Data, key: Buffer | undefined): Record<string, unknown> | null {
  if (!key || typeof data[BOX] !== 'string') return null;
  const plain = open(key, Buffer.from(data[BOX], 'base64'), aadOf(data));
  return plain ? (JSON.parse(plain.toString('utf8')) as Record<string, unknown>) : null;
}

/** Whether the stored data holds any sealed value (so that reading it needs its record's key). */
export function hasSealed(_type: string, data: Data): boolean {
  return typeof data[BOX] === 'string';
}

/**
 * The data with its sealed values opened with `key`; values that do not open (their key was
 * deleted) read as null, and their fields are listed in `erased`.
 */
export function openData(type: string, data: Data, key: Buffer | undefined): Data {
  const box = openBox(data, key);
  const erased = new Set<string>();
  const opened = mapValues(type, data, (field, _path, value) => {
    if (!isSealed(value)) return value;
    const path = value.$pd;
    if (box && path in box) return box[path];
    if (field !== '$key') erased.add(field);
    return field === '$key' ? [] : null;
  });
  const { [BOX]: _box, ...rest } = opened;
  if (erased.size === 0) return rest;
  const before = Array.isArray(data['erased']) ? (data['erased'] as string[]) : [];
  return { ...rest, erased: [...new Set([...before, ...erased])] };
}
