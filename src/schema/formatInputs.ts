import * as v from 'valibot';
import type { StoredValue } from './values.js';
import { isUuid } from '../core/ids.js';
import { isCalendarDate, normalizeDateTime } from './dates.js';

/**
 * The valibot schemas of the value formats of spec section 2.2: what a client may send for a field
 * that has a value (null and blank strings are handled by the caller, see validate.ts), and what
 * it becomes. Links and people become references that the command layer resolves to ids. Which
 * format uses which schema is decided in the format table (./formats.ts).
 */

/** A link or person given as `{ id }` (`id`), or as text to resolve: an id, a name or an email. */
export type Reference = { id: string } | { text: string };

export type FieldInput =
  | { kind: 'value'; value: StoredValue }
  | { kind: 'link'; refs: Reference[]; many: boolean; object: string }
  | { kind: 'person'; ref: Reference };

export type FormatSchema = v.GenericSchema<unknown, FieldInput>;

export const MAX_LINKS = 1000;
const MAX_EMAIL_LENGTH = 254;

/** A short, safe description of any value for messages: never the whole of a huge string. */
export function describe(value: unknown): string {
  if (typeof value === 'string') {
    return value.length > 60 ? `${JSON.stringify(value.slice(0, 60))}… (${value.length} characters)` : JSON.stringify(value);
  }
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (value === null) return 'null';
  if (value === undefined) return 'nothing';
  if (Array.isArray(value)) return 'a list';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

const stored = (value: StoredValue): FieldInput => ({ kind: 'value', value });

export function isHttpUrl(value: string): boolean {
  if (!/^https?:\/\//i.test(value)) return false;
  try {
    const url = new URL(value);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
  } catch {
    return false;
  }
}

export const textSchema: FormatSchema = v.pipe(
  v.string((issue) => `must be text, got ${describe(issue.input)}`),
  v.transform((value) => stored(value)),
);

export const numberSchema: FormatSchema = v.pipe(
  v.number((issue) => `must be a number, got ${describe(issue.input)}`),
  v.finite((issue) => `must be a finite number, got ${describe(issue.input)}`),
  v.transform((value) => stored(value)),
);

export const dateSchema: FormatSchema = v.pipe(
  v.string((issue) => `must be a date written YYYY-MM-DD, got ${describe(issue.input)}`),
  v.check(isCalendarDate, (issue) => `${describe(issue.input)} is not a calendar date written YYYY-MM-DD`),
  v.transform((value) => stored(value)),
);

export const dateTimeSchema: FormatSchema = v.pipe(
  v.string((issue) => `must be an ISO 8601 date and time such as 2024-05-01T09:30:00Z, got ${describe(issue.input)}`),
  v.check(
    (value) => normalizeDateTime(value) !== null,
    (issue) => `${describe(issue.input)} is not an ISO 8601 date and time with a time zone, such as 2024-05-01T09:30:00Z or 2024-05-01T11:30:00+02:00`,
  ),
  v.transform((value) => stored(normalizeDateTime(value))),
);

export const booleanSchema: FormatSchema = v.pipe(
  v.boolean((issue) => `must be true or false, got ${describe(issue.input)}`),
  v.transform((value) => stored(value)),
);

export const urlSchema: FormatSchema = v.pipe(
  v.string((issue) => `must be a web address, got ${describe(issue.input)}`),
  v.check(isHttpUrl, (issue) => `${describe(issue.input)} is not a web address starting with http:// or https://`),
  v.transform((value) => stored(value)),
);

export const emailSchema: FormatSchema = v.pipe(
  v.string((issue) => `must be an email address, got ${describe(issue.input)}`),
  v.maxLength(MAX_EMAIL_LENGTH, (issue) => `${describe(issue.input)} is not an email address (at most ${MAX_EMAIL_LENGTH} characters)`),
  v.email((issue) => `${describe(issue.input)} is not an email address`),
  v.transform((value) => stored(value)),
);

export function oneOfSchema(values: readonly string[]): FormatSchema {
  const allowed = values.join(', ');
  return v.pipe(
    v.picklist(values, (issue) => `${describe(issue.input)} is not one of ${allowed}`),
    v.transform((value: string) => stored(value)),
  );
}

export function autoNumberSchema(prefix: string): FormatSchema {
  return v.pipe(
    v.string((issue) => `must be text such as ${prefix}00001, got ${describe(issue.input)}`),
    v.transform((value) => stored(value)),
  );
}

/**
 * A non-blank string (trimmed, to be resolved as an id, name or email), or `{ id }` with exactly
 * that key, whose id passes `idCheck`. `what` describes the accepted values for messages.
 */
function referenceSchema(
  what: string,
  idCheck: (id: string) => boolean,
  idRule: string,
  normalizeId: (id: string) => string,
): v.GenericSchema<unknown, Reference> {
  const message = (issue: v.BaseIssue<unknown>) => `must be ${what}, got ${describe(issue.input)}`;
  const idMessage = (issue: v.BaseIssue<unknown>) => `{ "id" } must hold ${idRule}, got ${describe(issue.input)}`;
  const byText = v.pipe(
    v.string(message),
    v.check((value) => value.trim() !== '', message),
    v.transform((value): Reference => ({ text: value.trim() })),
  );
  const byId = v.pipe(
    v.strictObject({ id: v.pipe(v.string(idMessage), v.check(idCheck, idMessage)) }),
    v.transform((value): Reference => ({ id: normalizeId(value.id) })),
  );
  return v.pipe(
    v.unknown(),
    v.rawTransform(({ dataset, addIssue, NEVER }) => {
      const value = dataset.value;
      const isObject = typeof value === 'object' && value !== null && !Array.isArray(value);
      if (isObject) {
        const keys = Object.keys(value);
        if (keys.length !== 1 || keys[0] !== 'id') {
          const shown = keys.slice(0, 5).map((key) => describe(key)).join(', ') + (keys.length > 5 ? ', …' : '');
          addIssue({ message: `must be ${what}; an object must have exactly the key "id", got ${keys.length === 0 ? 'no keys' : `keys ${shown}`}` });
          return NEVER;
        }
      }
      const result = v.safeParse(isObject ? byId : byText, value);
      if (result.success) return result.output;
      addIssue({ message: result.issues[0].message });
      return NEVER;
    }),
  );
}

function linkReference(object: string): v.GenericSchema<unknown, Reference> {
  return referenceSchema(
    `the linked ${object} record's id, its name, or { "id": "<uuid>" }`,
    isUuid,
    `the linked ${object} record's uuid`,
    (id) => id.toLowerCase(),
  );
}

export function linkSchema(object: string): FormatSchema {
  return v.pipe(
    linkReference(object),
    v.transform((ref): FieldInput => ({ kind: 'link', refs: [ref], many: false, object })),
  );
}

export function linkListSchema(object: string): FormatSchema {
  const what = `a list of at most ${MAX_LINKS} links to ${object} records (ids, names or { "id": "<uuid>" })`;
  return v.pipe(
    v.array(v.unknown(), (issue) => `must be ${what}, got ${describe(issue.input)}`),
    v.maxLength(MAX_LINKS, (issue) => `must be ${what}, got ${issue.input.length} links`),
    v.array(linkReference(object)),
    v.transform((refs): FieldInput => ({ kind: 'link', refs, many: true, object })),
  );
}

export const personSchema: FormatSchema = v.pipe(
  referenceSchema(`a user's id, email address or full name, or { "id": "<user id>" }`, (id) => id.trim() !== '', 'a user id', (id) => id),
  v.transform((ref): FieldInput => ({ kind: 'person', ref })),
);

/**
 * Runs a format's schema: the parsed input, or the first problem's message. Problems inside a
 * link list name the item (`item 3: ...`, 0-based).
 */
export function parseFormat(schema: FormatSchema, value: unknown): { ok: true; input: FieldInput } | { ok: false; message: string } {
  const result = v.safeParse(schema, value, { abortEarly: true });
  if (result.success) return { ok: true, input: result.output };
  const issue = result.issues[0];
  const item = issue.path?.find((step) => step.type === 'array');
  return { ok: false, message: item ? `item ${String(item.key)}: ${issue.message}` : issue.message };
}
