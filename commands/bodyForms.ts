/**
 * The three body forms of a write (spec 4.2): one record, an array of records, or
 * `{ "records": [...] }`. Parsed here only: the upsert takes its records from here, and the route
 * the field names it checks the catalogue for.
 */
export function recordsInBody(body: unknown): unknown[] | null {
  if (Array.isArray(body)) return body;
  if (isPlainObject(body) && Object.keys(body).length === 1 && Array.isArray(body['records'])) return body['records'];
  if (isPlainObject(body)) return [body];
  return null;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
