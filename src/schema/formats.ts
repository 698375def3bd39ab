import { isUuid } from '../core/ids.js';
import { filterKey } from './filterKey.js';
import { isCalendarDate, normalizeDateTime } from './dates.js';
import {
  autoNumberSchema,
  booleanSchema,
  dateSchema,
  dateTimeSchema,
  describe,
  emailSchema,
  linkListSchema,
  linkSchema,
  numberSchema,
  oneOfSchema,
  personSchema,
  textSchema,
  urlSchema,
  type FormatSchema,
} from './formatInputs.js';
import type { FieldFormat } from './types.js';

export { describe, parseFormat, type FieldInput, type FormatSchema, type Reference } from './formatInputs.js';

/**
 * THE format table: for each value format of spec 2.2, its name, its valibot validator (what a
 * client may send), how a REST record shows it, its OpenAPI schemas and how a list filter reads
 * it. Validation, rendering, filters, `csr fields add` and the OpenAPI document all read this
 * table, so adding a format is adding a row here.
 */

type Format<T extends FieldFormat['type']> = Extract<FieldFormat, { type: T }>;
/** A JSON Schema (2020-12, as OpenAPI 3.1 uses it). */
export type JsonSchema = Record<string, unknown>;

export type FilterOutcome = { ok: true; key: string } | { ok: false; problem: string };

/** How a REST record shows a stored value (queries/recordFormat.ts). */
export type RestForm = 'value' | 'link' | 'linkList' | 'person' | 'files' | 'calculated';

export interface OpenApiContext {
  /** Whether the caller's key may read the object (links to others are `{ id }` only, spec 5.8). */
  canAccess(object: string): boolean;
}

export interface FormatRow<T extends FieldFormat['type']> {
  /** Spec 2.2's name, e.g. "Date and time". */
  label: string;
  /** What `csr fields add --format` takes for it (besides the label); null: not definable there. */
  cli: string | null;
  /** The validator of a sent value; null: a client can never write it. */
  input(format: Format<T>): FormatSchema | null;
  rest: RestForm;
  /** Whether ?match= may name a field of this format. */
  matchable: boolean;
  /** OpenAPI schema of the value as returned (null included: every field may be empty). */
  returned(format: Format<T>, context: OpenApiContext): JsonSchema;
  /** OpenAPI schema of the value as sent (null clears it); null: not writable. */
  sent(format: Format<T>): JsonSchema | null;
  /** A list filter's value as the read store compares it (spec 4.1: exact, case-insensitive). */
  filter(format: Format<T>, raw: string): FilterOutcome;
}

const NUMBER = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;

const nullable = (schema: JsonSchema): JsonSchema => {
  const type = schema['type'];
  if (typeof type === 'string') return { ...schema, type: [type, 'null'] };
  if ('enum' in schema) return { ...schema, enum: [...(schema['enum'] as unknown[]), null] };
  return { anyOf: [schema, { type: 'null' }] };
};
const lowered = (raw: string): FilterOutcome => ({ ok: true, key: filterKey(raw) });
const numeric = (raw: string): FilterOutcome => {
  const trimmed = raw.trim();
  const value = NUMBER.test(trimmed) ? Number(trimmed) : NaN;
  return Number.isFinite(value) ? { ok: true, key: filterKey(value) } : { ok: false, problem: `${describe(raw)} is not a number` };
};
const linkFilter = (object: string, raw: string): FilterOutcome =>
  isUuid(raw) ? { ok: true, key: filterKey(raw) } : { ok: false, problem: `pass the linked ${object} record's id (a uuid), got ${describe(raw)}` };

const linkRef = (object: string, context: OpenApiContext): JsonSchema =>
  context.canAccess(object) ? { $ref: '#/components/schemas/LinkRef' } : { $ref: '#/components/schemas/LinkId' };
const linkInput: JsonSchema = {
  anyOf: [{ type: 'string', description: "the linked record's id or name" }, { $ref: '#/components/schemas/LinkId' }],
};

const text = (schema: JsonSchema = {}): JsonSchema => ({ type: 'string', ...schema });

export const FORMATS: { [T in FieldFormat['type']]: FormatRow<T> } = {
  text: {
    label: 'Text', cli: 'text', input: () => textSchema, rest: 'value', matchable: true,
    returned: () => nullable(text()), sent: () => nullable(text()), filter: (_, raw) => lowered(raw),
  },
  number: {
    label: 'Number', cli: 'number', input: () => numberSchema, rest: 'value', matchable: true,
    returned: () => nullable({ type: 'number' }), sent: () => nullable({ type: 'number' }), filter: (_, raw) => numeric(raw),
  },
  date: {
    label: 'Date', cli: 'date', input: () => dateSchema, rest: 'value', matchable: true,
    returned: () => nullable(text({ format: 'date' })), sent: () => nullable(text({ format: 'date' })),
    filter: (_, raw) => (isCalendarDate(raw) ? { ok: true, key: raw } : { ok: false, problem: `${describe(raw)} is not a calendar date written YYYY-MM-DD` }),
  },
  dateTime: {
    label: 'Date and time', cli: 'dateTime', input: () => dateTimeSchema, rest: 'value', matchable: true,
    returned: () => nullable(text({ format: 'date-time' })), sent: () => nullable(text({ format: 'date-time' })),
    filter: (_, raw) => {
      const moment = normalizeDateTime(raw);
      return moment ? { ok: true, key: filterKey(moment) } : { ok: false, problem: `${describe(raw)} is not an ISO 8601 date and time with a time zone` };
    },
  },
  boolean: {
    label: 'Boolean', cli: 'boolean', input: () => booleanSchema, rest: 'value', matchable: true,
    returned: () => nullable({ type: 'boolean' }), sent: () => nullable({ type: 'boolean' }),
    filter: (_, raw) => {
      const lower = raw.toLowerCase();
      return lower === 'true' || lower === 'false' ? { ok: true, key: lower } : { ok: false, problem: `${describe(raw)} is not true or false` };
    },
  },
  url: {
    label: 'Web address', cli: 'url', input: () => urlSchema, rest: 'value', matchable: true,
    returned: () => nullable(text({ format: 'uri' })), sent: () => nullable(text({ format: 'uri' })), filter: (_, raw) => lowered(raw),
  },
  email: {
    label: 'Email address', cli: 'email', input: () => emailSchema, rest: 'value', matchable: true,
    returned: () => nullable(text({ format: 'email' })), sent: () => nullable(text({ format: 'email' })), filter: (_, raw) => lowered(raw),
  },
  oneOf: {
    label: 'One of', cli: 'oneOf', input: (format) => oneOfSchema(format.values), rest: 'value', matchable: true,
    returned: (format) => ({ enum: [...format.values, null] }), sent: (format) => ({ enum: [...format.values, null] }),
    filter: (format, raw) => {
      const wanted = filterKey(raw);
      return format.values.some((value) => filterKey(value) === wanted)
        ? { ok: true, key: wanted }
        : { ok: false, problem: `${describe(raw)} is not one of ${format.values.join(', ')}` };
    },
  },
  autoNumber: {
    label: 'Auto number', cli: 'autoNumber', input: (format) => autoNumberSchema(format.prefix), rest: 'value', matchable: true,
    returned: (format) => nullable(text({ description: `filled in by the service when empty, e.g. ${format.prefix}00001` })),
    sent: () => nullable(text({ maxLength: 64 })), filter: (_, raw) => lowered(raw),
  },
  link: {
    label: 'Link', cli: 'link', input: (format) => linkSchema(format.object), rest: 'link', matchable: true,
    returned: (format, context) => nullable(linkRef(format.object, context)), sent: () => nullable(linkInput),
    filter: (format, raw) => linkFilter(format.object, raw),
  },
  linkList: {
    label: 'Link list', cli: 'linkList', input: (format) => linkListSchema(format.object), rest: 'linkList', matchable: false,
    returned: (format, context) => ({ type: 'array', items: linkRef(format.object, context) }),
    sent: () => nullable({ type: 'array', items: linkInput, maxItems: 1000 }),
    filter: (format, raw) => linkFilter(format.object, raw),
  },
  person: {
    label: 'Person', cli: 'person', input: () => personSchema, rest: 'person', matchable: true,
    returned: () => nullable({ $ref: '#/components/schemas/PersonRef' }),
    sent: () => nullable({ anyOf: [{ type: 'string', description: "a user's id, email address or full name" }, { $ref: '#/components/schemas/LinkId' }] }),
    filter: (_, raw) => lowered(raw),
  },
  files: {
    label: 'Files', cli: null, input: () => null, rest: 'files', matchable: false,
    returned: () => ({ type: 'array', readOnly: true, items: { $ref: '#/components/schemas/FileRef' } }), sent: () => null,
    filter: () => ({ ok: false, problem: 'files fields cannot be filtered on' }),
  },
  calculated: {
    label: 'Calculated', cli: null, input: () => null, rest: 'calculated', matchable: false,
    returned: () => ({ type: ['number', 'string', 'null'], readOnly: true }), sent: () => null,
    filter: (format, raw) => {
      if (format.timeDependent) return { ok: false, problem: "this value depends on today's date and cannot be filtered on" };
      const trimmed = raw.trim();
      return { ok: true, key: NUMBER.test(trimmed) && Number.isFinite(Number(trimmed)) ? filterKey(Number(trimmed)) : filterKey(raw) };
    },
  },
  readOnlyNumber: {
    label: 'Number (read only)', cli: null, input: () => null, rest: 'value', matchable: true,
    returned: () => ({ type: ['number', 'null'], readOnly: true }), sent: () => null, filter: (_, raw) => numeric(raw),
  },
};

/** The table's row of a format, typed for that format. */
export function rowOf<T extends FieldFormat['type']>(format: Format<T>): FormatRow<T> {
  return FORMATS[format.type] as unknown as FormatRow<T>;
}

/** Formats a client can never write. */
export function isReadOnly(format: FieldFormat): boolean {
  return rowOf(format).sent(format as never) === null;
}

const schemas = new WeakMap<FieldFormat, FormatSchema>();

/** The validator for one format (built once per format object), or null for read-only formats. */
export function formatSchema(format: FieldFormat): FormatSchema | null {
  const cached = schemas.get(format);
  if (cached) return cached;
  const schema = rowOf(format).input(format as never);
  if (schema) schemas.set(format, schema);
  return schema;
}

/** The spec 2.2 name of a field's format, e.g. "Number (USD)" or "Link to clients". */
export function formatLabel(format: FieldFormat): string {
  if (format.type === 'number' && format.currency) return `Number (${format.currency})`;
  if (format.type === 'link' || format.type === 'linkList') return `${FORMATS[format.type].label} to ${format.object}`;
  if (format.type === 'oneOf') return `One of: ${format.values.join(', ')}`;
  return FORMATS[format.type].label;
}
