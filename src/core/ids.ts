import { randomUUID } from 'node:crypto';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A UUID in any case: ids sent in a body or a link may be upper case; the stores hold them in lower case. */
export function isUuid(value: unknown): value is string {
  return typeof value === 'string' && UUID.test(value);
}

/**
 * A new record or event id: a UUID of version 7 (RFC 9562), 48 bits of Unix milliseconds and then
 * random bits. The stores index records and events by id (and by `record-<id>` stream); ids made
 * close in time sit side by side in those indexes, so writing 1,000 new records touches a few
 * index pages instead of one random page each (docs/performance.md). The random part comes from
 * randomUUID, which draws from a pool, where randomBytes(16) for every id would not.
 */
export function newId(now: number = Date.now()): string {
  // A create makes several ids in one millisecond: its time part is formatted once per millisecond.
  if (now !== prefixMs) {
    const time = now.toString(16).padStart(12, '0');
    prefix = `${time.slice(0, 8)}-${time.slice(8, 12)}-7`;
    prefixMs = now;
  }
  // randomUUID(): xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx; keep what follows the version digit.
  return prefix + randomUUID().slice(15);
}

/** The time part of the last id made, and its millisecond. */
let prefixMs = Number.NaN;
let prefix = '';
