import { lookups } from './calculated.js';
import type { Values } from './values.js';
import { isUuid } from '../core/ids.js';
import { describe, formatSchema, parseFormat, rowOf, type FieldInput } from './formats.js';
import type { FieldDef, ObjectDef } from './types.js';

export type { FieldInput, Reference } from './formats.js';

/**
 * Write validation of one record against its object (spec 2.1–2.3, PRODUCT.md section 3), and
 * the normalisation of list filter values. Pure: links and people come out as references that
 * the command layer resolves.
 *
 * - The input must be a plain object. `id` must be a record uuid and is returned separately
 *   (lower-cased); whether it is allowed is the caller's decision. `createdAt`/`updatedAt`,
 *   unknown keys (including `__proto__`, `constructor`, `prototype`) and read-only fields fail.
 * - `null` or a blank string (only whitespace) means "no value": it clears a field that is not
 *   required, and fails for a required one. A cleared link list is stored as null (rendered []);
 *   an empty list [] clears it the same way.
 * - An auto number sent as null or blank is ignored: the service fills it in on create and an
 *   existing number stays on update (an auto number is never cleared).
 * - Create: every required field other than auto numbers must be present. Update: required
 *   fields may be omitted but not cleared.
 * - Every problem is reported (in the order of the input's keys, then missing required fields),
 *   joined with '; ', at most 10 of them.
 * - Cross-field rules (`checkRecordRules`) run on the values present in the input; the command
 *   layer runs them again on the merged record of an update.
 */

export type ValidationResult = { ok: true; fields: Record<string, FieldInput>; id?: string } | { ok: false; message: string };

const MAX_PROBLEMS = 10;
const SYSTEM_FIELDS = new Set(['createdAt', 'updatedAt']);

const fieldMaps = new WeakMap<ObjectDef, ReadonlyMap<string, FieldDef>>();

/** Field definitions by key, in a Map so that no inherited property can pass for a field. */
function fieldsOf(object: ObjectDef): ReadonlyMap<string, FieldDef> {
  let fields = fieldMaps.get(object);
  if (!fields) {
    fields = new Map(object.fields.map((field) => [field.key, field]));
    fieldMaps.set(object, fields);
  }
  return fields;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const prototype: unknown = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

function quoteKey(key: string): string {
  return key.length > 100 ? `${key.slice(0, 100)}…` : key;
}

/** "No value": null, a blank string, or for a link list an empty list. */
function isBlank(value: unknown, field: FieldDef): boolean {
  if (value === null || (typeof value === 'string' && value.trim() === '')) return true;
  return field.format.type === 'linkList' && Array.isArray(value) && value.length === 0;
}

function readOnlyProblem(object: ObjectDef, field: FieldDef): string | null {
  switch (field.format.type) {
    case 'calculated':
      return `field '${field.key}' of ${object.key} is calculated and cannot be set`;
    case 'readOnlyNumber':
      return `field '${field.key}' of ${object.key} is read only and cannot be set`;
    case 'files':
      return `field '${field.key}' of ${object.key} is a files field and cannot be set through the API`;
    default:
      return null;
  }
}

export function validateRecord(object: ObjectDef, input: unknown, mode: 'create' | 'update'): ValidationResult {
  if (!isPlainObject(input)) return { ok: false, message: `a record must be an object of field keys to values, got ${describe(input)}` };
  const known = fieldsOf(object);
  const problems: string[] = [];
  const fields: Record<string, FieldInput> = {};
  let id: string | undefined;

  for (const key of Object.keys(input)) {
    const value = input[key];
    if (key === 'id') {
      if (isUuid(value)) id = value.toLowerCase();
      else problems.push(`id must be a record uuid, got ${describe(value)}`);
      continue;
    }
    if (SYSTEM_FIELDS.has(key)) {
      problems.push(`${key} cannot be set`);
      continue;
    }
    const field = known.get(key);
    if (!field) {
      problems.push(
        object.inactiveFields?.some((inactive) => inactive.key === key)
          ? `field '${key}' of ${object.key} is deactivated and cannot be set`
          : `unknown field '${quoteKey(key)}' for object ${object.key}`,
      );
      continue;
    }
    const readOnly = readOnlyProblem(object, field);
    if (readOnly) {
      problems.push(readOnly);
      continue;
    }
    if (isBlank(value, field)) {
      if (field.format.type === 'autoNumber') continue;
      if (field.required) problems.push(`${key} is required and cannot be ${mode === 'create' ? 'empty' : 'cleared'}`);
      else fields[key] = { kind: 'value', value: null };
      continue;
    }
    const schema = formatSchema(field.format);
    if (!schema) continue; // unreachable: read-only formats were refused above
    const parsed = parseFormat(schema, value);
    if (parsed.ok) fields[key] = parsed.input;
    else problems.push(`${key}: ${parsed.message}`);
  }

  if (mode === 'create') {
    for (const field of object.fields) {
      if (field.required && field.format.type !== 'autoNumber' && !Object.hasOwn(input, field.key)) problems.push(`${field.key} is required`);
    }
  }

  if (problems.length === 0) {
    const values: Values = {};
    for (const [key, fieldInput] of Object.entries(fields)) if (fieldInput.kind === 'value') values[key] = fieldInput.value;
    const rule = checkRecordRules(object.key, values);
    if (rule) problems.push(rule);
  }

  if (problems.length > 0) {
    const shown = problems.slice(0, MAX_PROBLEMS);
    if (problems.length > MAX_PROBLEMS) shown.push(`and ${problems.length - MAX_PROBLEMS} more problems`);
    return { ok: false, message: shown.join('; ') };
  }
  return id === undefined ? { ok: true, fields } : { ok: true, fields, id };
}

/** A cross-field rule: a message, or null when the values pass (or what it needs is missing). */
type RecordRule = (values: Values) => string | null;

function scoreRule(type: string, min: number, max: number): RecordRule {
  return (values) => {
    const score = values['score'];
    if (values['type'] !== type || typeof score !== 'number') return null;
    return Number.isInteger(score) && score >= min && score <= max
      ? null
      : `score: ${score} is not a valid ${type} score (a whole number from ${min} to ${max})`;
  };
}

const objectRules: ReadonlyMap<string, readonly RecordRule[]> = new Map([['surveys', [scoreRule('NPS', 0, 10), scoreRule('CSAT', 1, 5)]]]);

/**
 * Cross-field rules of an object over stored values (PRODUCT.md section 3: survey scores within
 * their scale). Run on a create's values, and by the command layer on an update's merged record.
 */
export function checkRecordRules(objectKey: string, values: Values): string | null {
  for (const rule of objectRules.get(objectKey) ?? []) {
    const problem = rule(values);
    if (problem) return problem;
  }
  return null;
}

export type FilterResult = { ok: true; key: string } | { ok: false; message: string };

/**
 * A list query's filter value (spec 4.1: exact, case-insensitive) normalised to the key the read
 * store compares (`filterKey` of the stored value), as the format table says (numbers
 * numerically, booleans in any case, dates validated, date-times as the normalised moment, links
 * by id, one-of values only allowed ones, the rest lower-cased). Values taken from linked records
 * cannot be filtered on: the read model does not hold them.
 */
/** Whether a list may filter on the field (what `parseFilterValue` can accept some value for). */
export function isFilterable(field: FieldDef): boolean {
  const format = field.format;
  if (format.type === 'files') return false;
  if (format.type !== 'calculated') return true;
  return !format.timeDependent && !lookups.some((lookup) => lookup.field === field.key);
}

export function parseFilterValue(field: FieldDef, raw: string): FilterResult {
  if (field.format.type === 'calculated' && lookups.some((lookup) => lookup.field === field.key)) {
    return { ok: false, message: `${field.key}: this value is taken from the linked record and cannot be filtered on` };
  }
  const outcome = rowOf(field.format).filter(field.format as never, raw);
  return outcome.ok ? outcome : { ok: false, message: `${field.key}: ${outcome.problem}` };
}
