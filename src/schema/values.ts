/**
 * The values a record holds, as every layer stores and compares them: the schema validates and
 * calculates them, the decider compares them, events carry them, the read store keeps them. Here,
 * below all of them, so that none of those imports a store's port for its vocabulary.
 */

/** A stored field value: links are ids, link lists arrays of ids, people user ids, dates strings. */
export type StoredValue = string | number | boolean | string[] | null;

export type Values = Record<string, StoredValue>;

/** Whether two stored values are the same value (lists item by item). */
export function sameStoredValue(a: StoredValue, b: StoredValue): boolean {
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((item, i) => item === b[i]);
  return a === b;
}
