import { ValidationFailed } from '../src/core/errors.js';
import { filterKey } from '../src/schema/filterKey.js';
import type { ReadStore, RecordDocument } from '../src/readstore/port.js';
import { uniqueFields } from '../src/schema/catalogue.js';
import type { ObjectDef } from '../src/schema/types.js';

/**
 * Groups of records that an upsert would find "ambiguous": the same record name (objects matched
 * by name), the same unique value, or the same values of the `match` fields, compared as matching
 * compares them (exact, case-insensitive). Read from the read model, page by page, for an operator
 * to merge or rename them (docs/concurrency.md).
 */

export interface DuplicateGroup {
  /** The shared value per field (the name as `name`), normalised. */
  key: Record<string, string>;
  count: number;
  records: { id: string; name: string | null; createdAt: string; updatedAt: string }[];
}

const PAGE = 1_000;

export async function findDuplicates(readStore: ReadStore, workspaceId: string, object: ObjectDef, match?: string[]): Promise<DuplicateGroup[]> {
  const keyOf = keyFunction(object, match);
  const groups = new Map<string, DuplicateGroup>();
  for (let offset = 0; ; offset += PAGE) {
    const page = await readStore.find({ workspaceId, object: object.key, filters: [], limit: PAGE, offset });
    for (const document of page.documents) {
      const key = keyOf(document);
      if (!key) continue;
      const id = JSON.stringify(key);
      const group = groups.get(id) ?? { key, count: 0, records: [] };
      group.count++;
      group.records.push({ id: document.id, name: document.name, createdAt: document.createdAt, updatedAt: document.updatedAt });
      groups.set(id, group);
    }
    if (page.documents.length < PAGE) break;
  }
  return [...groups.values()].filter((group) => group.count > 1).sort((a, b) => b.count - a.count || JSON.stringify(a.key).localeCompare(JSON.stringify(b.key)));
}

/** The match fields given, else the name (objects matched by name), else the unique fields. */
function keyFunction(object: ObjectDef, match: string[] | undefined): (document: RecordDocument) => Record<string, string> | null {
  if (match && match.length > 0) {
    for (const field of match) {
      if (!object.fields.some((candidate) => candidate.key === field)) throw new ValidationFailed(`--match: unknown field '${field}' for object ${object.key}`);
    }
    return (document) => fieldsKey(document, match);
  }
  if (object.matchByName) return (document) => (document.name === null ? null : { name: filterKey(document.name) });
  const unique = uniqueFields(object);
  if (unique.length === 0) throw new ValidationFailed(`${object.key} records are not matched by name: give --match <field,...>`);
  return (document) => fieldsKey(document, unique);
}

function fieldsKey(document: RecordDocument, fields: string[]): Record<string, string> | null {
  const key: Record<string, string> = {};
  for (const field of fields) {
    const value = document.fields[field];
    if (value === undefined || value === null || Array.isArray(value)) return null;
    key[field] = filterKey(value);
  }
  return key;
}
