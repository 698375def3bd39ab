import type { StoredValue } from './values.js';

/**
 * The one normalisation behind "exact, case-insensitive" filters, shared by every adapter and by
 * the query parser: a value becomes the lower-cased strings it can be found by.
 */
export function filterKeys(value: StoredValue): string[] {
  if (value === null) return [];
  if (Array.isArray(value)) return value.map(filterKey);
  return [filterKey(value)];
}

export function filterKey(value: string | number | boolean): string {
  return String(value).toLowerCase();
}
