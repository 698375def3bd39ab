import type { FieldDef } from '../../src/schema/types.js';

/**
 * A CSV cell -> the value the REST API takes for its field (spec 2.2), which the upsert then
 * validates exactly as a request's: numbers as numbers, Booleans also yes/no/1/0, link lists
 * separated by `;`. An empty cell is not sent: the field keeps its value (or has none). A cell
 * that does not parse is passed on as text, so the record fails with the API's message.
 */

const TRUE = new Set(['true', 'yes', '1']);
const FALSE = new Set(['false', 'no', '0']);

export function cellValue(field: FieldDef, cell: string): unknown {
  const text = cell.trim();
  if (text === '') return undefined;
  switch (field.format.type) {
    case 'number': {
      const n = Number(text);
      return Number.isFinite(n) ? n : text;
    }
    case 'boolean': {
      const lower = text.toLowerCase();
      return TRUE.has(lower) ? true : FALSE.has(lower) ? false : text;
    }
    case 'linkList':
      return text
        .split(';')
        .map((item) => item.trim())
        .filter(Boolean);
    default:
      return text;
  }
}
