import { ValidationFailed } from '../../core/errors.js';
import { filterKey, filterKeys } from '../filterKey.js';
import type { RecordDocument, StoredRecord, Values } from '../port.js';

/** RecordDocument <-> the rows of csr_records and csr_record_keys (pure; ./schema.ts has the tables). */

/** The columns a document is read from (fields and calculated may be left out by findStored). */
export const DOCUMENT_COLUMNS = 'r.workspace_id, r.object, r.id, r.name, r.fields, r.calculated, r.created_at, r.updated_at, r.created_position, r.revision, r.rendered';

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
  keys: string[];
}

/** One filter key: the field and an already normalised value, as JSON so no pair reads as another. */
export function filterEntry(field: string, key: string): string {
  return JSON.stringify([field, key]);
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
  return {
    workspace_id: document.workspaceId,
    object: document.object,
    id: document.id,
    name: document.name,
    name_key: document.name === null ? null : filterKey(document.name),
    fields: document.fields,
    calculated: document.calculated,
    created_at: document.createdAt,
    updated_at: document.updatedAt,
    updated_ms: epochMs(document.updatedAt, 'updatedAt'),
    created_position: document.createdPosition,
    revision: document.revision,
    rendered: document.rendered ?? null,
    keys: filterEntries(document.fields, document.calculated),
  };
}

export function fromRow(row: DocumentRow): RecordDocument {
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

/** A row for a reader of its rendering; a row read without its values (fields null) has no document. */
export function toStoredRecord(row: DocumentRow): StoredRecord {
  return { id: row.id, rendered: row.rendered, document: row.fields === null ? null : () => fromRow(row) };
}
