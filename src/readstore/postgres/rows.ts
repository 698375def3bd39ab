import { ValidationFailed } from '../../core/errors.js';
import { filterKey, filterKeys } from '../../schema/filterKey.js';
import type { FieldFilter, RecordDocument, StoredRecord, Values } from '../port.js';

/**
 * RecordDocument <-> the rows of csr_records and csr_record_keys (pure; ./schema.ts has the tables).
 *
 * PostgreSQL's text and jsonb cannot hold the character U+0000, which the API accepts in any text
 * value: a document holding one would fail its projection's batch for ever. So every string of a
 * document's user data is stored escaped when it holds U+0000 or the escape character U+E000
 * (U+0000 -> U+E000 '0', U+E000 -> U+E000 '1', which reads back unambiguously), the row says so
 * (`escaped`), and only such rows are unescaped when read. Filter keys and the name key are JSON
 * text, which spells U+0000 as an escape, so they need nothing of this.
 */

/** The columns a document is read from (fields and calculated may be left out by findStored). */
export const DOCUMENT_COLUMNS =
  'r.workspace_id, r.object, r.id, r.name, r.fields, r.calculated, r.created_at, r.updated_at, r.created_position, r.revision, r.rendered, r.escaped';

export interface DocumentRow {
  workspace_id: string;
  object: string;
  id: string;
  name: string | null;
  fields: Values | null;
  calculated: Values | null;
  created_at: string;
  updated_at: string;
  created_position: string;
  revision: number;
  rendered: string | null;
  escaped: boolean;
}

/** A document as one element of the JSON array the write statements read with jsonb_to_recordset. */
export interface WrittenRow {
  workspace_id: string;
  object: string;
  id: string;
  name: string | null;
  name_key: string | null;
  fields: Values;
  calculated: Values;
  created_at: string;
  updated_at: string;
  updated_ms: number;
  created_position: string;
  revision: number;
  rendered: string | null;
  escaped: boolean;
  keys: string[];
}

const NEEDS_ESCAPE = /[\u0000\uE000]/;

function escapeText(text: string): string {
  return text.replace(/[\u0000\uE000]/g, (c) => (c === '\u0000' ? '\uE0000' : '\uE0001'));
}

function unescapeText(text: string): string {
  return text.replace(/\uE000([01])/g, (_, d: string) => (d === '0' ? '\u0000' : '\uE000'));
}

function mapValues(values: Values, map: (text: string) => string): Values {
  const mapped: Values = {};
  for (const [field, value] of Object.entries(values)) {
    mapped[field] = typeof value === 'string' ? map(value) : Array.isArray(value) ? value.map(map) : value;
  }
  return mapped;
}

/** Whether a document holds a string that must be escaped to be stored. */
function needsEscape(document: RecordDocument): boolean {
  const texts = (values: Values) =>
    Object.values(values).some((value) => (typeof value === 'string' ? NEEDS_ESCAPE.test(value) : Array.isArray(value) && value.some((item) => NEEDS_ESCAPE.test(item))));
  return [document.name, document.rendered].some((text) => typeof text === 'string' && NEEDS_ESCAPE.test(text)) || texts(document.fields) || texts(document.calculated);
}

/** The name's key for an exact case-insensitive match, as JSON text (see above). */
export function nameKey(name: string): string {
  return JSON.stringify(filterKey(name));
}

/** One filter key: the field and an already normalised value, as JSON so no pair reads as another. */
export function filterEntry(field: string, key: string): string {
  return JSON.stringify([field, key]);
}

/** The distinct filter keys that a query's filters ask for (the values normalised as a document's are). */
export function queryKeys(filters: readonly FieldFilter[]): string[] {
  return [...new Set(filters.map((filter) => filterEntry(filter.field, filterKey(filter.value))))];
}

/** Every (field, normalised value) key of a document, fields and calculated values together. */
export function filterEntries(fields: Values, calculated: Values): string[] {
  const entries = new Set<string>();
  for (const values of [fields, calculated]) {
    for (const [field, value] of Object.entries(values)) {
      if (value === undefined) continue;
      for (const key of filterKeys(value)) entries.add(filterEntry(field, key));
    }
  }
  return [...entries];
}

/** An ISO 8601 moment as epoch milliseconds; anything else is a ValidationFailed (as in every adapter). */
export function epochMs(moment: string, what: string): number {
  const ms = Date.parse(moment);
  if (Number.isNaN(ms)) throw new ValidationFailed(`${what} must be an ISO 8601 date-time, got "${moment}"`);
  return ms;
}

export function toWrittenRow(document: RecordDocument): WrittenRow {
  const escaped = needsEscape(document);
  const text = (value: string | null) => (value !== null && escaped ? escapeText(value) : value);
  return {
    workspace_id: document.workspaceId,
    object: document.object,
    id: document.id,
    name: text(document.name),
    name_key: document.name === null ? null : nameKey(document.name),
    fields: escaped ? mapValues(document.fields, escapeText) : document.fields,
    calculated: escaped ? mapValues(document.calculated, escapeText) : document.calculated,
    created_at: document.createdAt,
    updated_at: document.updatedAt,
    updated_ms: epochMs(document.updatedAt, 'updatedAt'),
    created_position: document.createdPosition,
    revision: document.revision,
    rendered: text(document.rendered ?? null),
    escaped,
    keys: filterEntries(document.fields, document.calculated),
  };
}

export function fromRow(row: DocumentRow): RecordDocument {
  if (row.escaped) return fromRow(unescapedRow(row));
  const document: RecordDocument = {
    workspaceId: row.workspace_id,
    object: row.object,
    id: row.id,
    name: row.name,
    fields: row.fields ?? {},
    calculated: row.calculated ?? {},
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    createdPosition: row.created_position,
    revision: row.revision,
  };
  if (row.rendered !== null) document.rendered = row.rendered;
  return document;
}

function unescapedRow(row: DocumentRow): DocumentRow {
  return {
    ...row,
    escaped: false,
    name: row.name === null ? null : unescapeText(row.name),
    fields: row.fields && mapValues(row.fields, unescapeText),
    calculated: row.calculated && mapValues(row.calculated, unescapeText),
    rendered: row.rendered === null ? null : unescapeText(row.rendered),
  };
}

/** A row for a reader of its rendering; a row read without its values (fields null) has no document. */
export function toStoredRecord(stored: DocumentRow): StoredRecord {
  const row = stored.escaped ? unescapedRow(stored) : stored;
  return { id: row.id, rendered: row.rendered, revision: row.revision, document: row.fields === null ? null : () => fromRow(row) };
}
