import { ValidationFailed } from '../../src/core/errors.js';
import type { FieldDef, ObjectDef } from '../../src/schema/types.js';

/**
 * The header row of an import file: each column names a field by key or by label (exact key
 * first, then key or label ignoring case and spaces), or is `id` (update that record). Unknown,
 * repeated, read-only and files columns fail the whole file before anything is written.
 */

export type Column = { kind: 'id' } | { kind: 'field'; field: FieldDef };

const normal = (text: string) => text.replace(/\s+/g, '').toLowerCase();

export function mapColumns(object: ObjectDef, header: string[]): Column[] {
  const byName = new Map<string, FieldDef>();
  for (const field of object.fields) {
    byName.set(normal(field.key), field);
    if (!byName.has(normal(field.label))) byName.set(normal(field.label), field);
  }
  const seen = new Set<string>();
  return header.map((raw, index) => {
    const name = raw.trim();
    if (name === '') throw new ValidationFailed(`the header row has an empty column name (column ${index + 1})`);
    if (name.toLowerCase() === 'id') {
      if (seen.has('id')) throw new ValidationFailed('the header row names id twice');
      seen.add('id');
      return { kind: 'id' };
    }
    const field = object.fields.find((candidate) => candidate.key === name) ?? byName.get(normal(name));
    if (!field) {
      throw new ValidationFailed(`column "${name}" is not a field of ${object.key} (use a field key or label: ${object.fields.map((f) => f.key).join(', ')})`);
    }
    if (seen.has(field.key)) throw new ValidationFailed(`columns name the field ${field.key} twice`);
    seen.add(field.key);
    const format = field.format.type;
    if (format === 'calculated' || format === 'readOnlyNumber') throw new ValidationFailed(`column "${name}": ${field.key} is read only and cannot be imported`);
    if (format === 'files') throw new ValidationFailed(`column "${name}": ${field.key} is a files field and cannot be imported`);
    return { kind: 'field', field };
  });
}
