import type { Filter, IndexDescription } from 'mongodb';
import { ValidationFailed } from '../../core/errors.js';
import { filterKey, filterKeys } from '../../schema/filterKey.js';
import type { FieldFilter, FindQuery, LinkEdge, RecordDocument, StoredRecord, Values } from '../port.js';

/**
 * The pure half of the MongoDB read store (src/readstore/mongodb.ts): RecordDocument <-> stored
 * document, FindQuery -> filter/sort/paging, and the index definitions that serve those queries.
 * Unit-tested in test/unit/mongodbMapping.test.ts; nothing here talks to a server.
 *
 * Case-insensitive exact filters use normalised shadow values, never a regex built from user input
 * and no collation: `nameKey` is filterKey(name), and `filterKeys` holds one entry per
 * (field, normalised value) pair of `fields` and `calculated` (array fields contribute one entry per
 * element). The entry is the JSON text of the pair, e.g. `["status","active"]`, so no field key or
 * value can be confused with another pair. One multikey compound index
 * (workspaceId, object, filterKeys, createdPosition) serves "equal on any number of fields, ordered
 * by creation": the first entry bounds the index scan, `$all` checks the others, and the order comes
 * from the index.
 */

export const RECORDS = 'records';
export const CHECKPOINTS = 'checkpoints';

export interface MongoRecord {
  /** JSON of [workspaceId, object, id]: unique without a separator that a value could contain. */
  _id: string;
  workspaceId: string;
  object: string;
  id: string;
  name: string | null;
  nameKey: string | null;
  fields: Values;
  calculated: Values;
  createdAt: string;
  updatedAt: string;
  /** updatedAt as epoch milliseconds: "updated since" compares moments, not spellings. */
  updatedMs: number;
  createdPosition: string;
  revision: number;
  filterKeys: string[];
  /** RecordDocument.rendered (absent in documents written before it existed). */
  rendered?: string | null;
}

export interface MongoCheckpoint {
  _id: string;
  position: string;
}

export function recordKey(workspaceId: string, object: string, id: string): string {
  return JSON.stringify([workspaceId, object, id]);
}

/** One entry of `filterKeys`: the field key and an already normalised value. */
export function filterEntry(field: string, key: string): string {
  return JSON.stringify([field, key]);
}

/** Every (field, normalised value) entry of a document, fields and calculated values together. */
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

export function toMongoRecord(document: RecordDocument): MongoRecord {
  return {
    _id: recordKey(document.workspaceId, document.object, document.id),
    workspaceId: document.workspaceId,
    object: document.object,
    id: document.id,
    name: document.name,
    nameKey: document.name === null ? null : filterKey(document.name),
    fields: document.fields,
    calculated: document.calculated,
    createdAt: document.createdAt,
    updatedAt: document.updatedAt,
    updatedMs: epochMs(document.updatedAt, 'updatedAt'),
    createdPosition: document.createdPosition,
    revision: document.revision,
    filterKeys: filterEntries(document.fields, document.calculated),
    rendered: document.rendered ?? null,
  };
}

/** A rebuild batch's documents as one unordered bulkWrite of upserting replacements. */
export function toBulkReplacements(documents: RecordDocument[]): { replaceOne: { filter: { _id: string }; replacement: MongoRecord; upsert: true } }[] {
  return documents.map((document) => {
    const stored = toMongoRecord(document);
    return { replaceOne: { filter: { _id: stored._id }, replacement: stored, upsert: true } };
  });
}

export function fromMongoRecord(stored: MongoRecord): RecordDocument {
  return {
    workspaceId: stored.workspaceId,
    object: stored.object,
    id: stored.id,
    name: stored.name ?? null,
    fields: stored.fields ?? {},
    calculated: stored.calculated ?? {},
    createdAt: stored.createdAt,
    updatedAt: stored.updatedAt,
    createdPosition: stored.createdPosition,
    revision: stored.revision,
    rendered: stored.rendered ?? undefined,
  };
}

/** A stored record for a reader of its rendering (the document is already parsed by the driver). */
export function toStoredRecord(document: RecordDocument): StoredRecord {
  return { id: document.id, rendered: document.rendered ?? null, document: () => document };
}

/** An ISO 8601 moment as epoch milliseconds; anything else is a ValidationFailed (as in every adapter). */
export function epochMs(moment: string, what: string): number {
  const ms = Date.parse(moment);
  if (Number.isNaN(ms)) throw new ValidationFailed(`${what} must be an ISO 8601 date-time, got "${moment}"`);
  return ms;
}

export type RecordQuery = Pick<FindQuery, 'workspaceId' | 'object' | 'filters' | 'name' | 'updatedSince'>;

/** FindQuery -> MongoDB filter. Only equality on normalised values and one range on updatedAt. */
export function toMongoFilter(query: RecordQuery): Filter<MongoRecord> {
  const filter: Filter<MongoRecord> = { workspaceId: query.workspaceId, object: query.object };
  const entries = [...new Set(query.filters.map((f: FieldFilter) => filterEntry(f.field, filterKey(f.value))))];
  if (entries.length === 1) filter.filterKeys = entries[0]!;
  else if (entries.length > 1) filter.filterKeys = { $all: entries };
  if (query.name !== undefined) filter.nameKey = filterKey(query.name);
  if (query.updatedSince !== undefined) filter.updatedMs = { $gt: epochMs(query.updatedSince, 'updatedSince') };
  return filter;
}

/** Creation order (the log order of each record's first event); the id breaks ties. */
export const RECORD_SORT = { createdPosition: 1, id: 1 } as const;

export interface Paging {
  skip: number;
  limit: number;
}

/**
 * offset/limit -> skip/limit, or null when no document can be returned (limit 0: MongoDB would read
 * `limit: 0` as "no limit").
 */
export function toPaging(query: Pick<FindQuery, 'limit' | 'offset'>): Paging | null {
  const skip = Math.max(0, Math.floor(query.offset));
  const limit = Math.floor(query.limit);
  if (!(limit > 0)) return null;
  return { skip, limit };
}

/**
 * Each index that serves a list ends in the sort keys (createdPosition, id), so a page is read in
 * order from the index instead of sorting every match in memory. `updatedMs` is a range: its
 * matches are sorted after the scan (updated_since queries are meant to return recent changes).
 */
export const RECORD_INDEXES: IndexDescription[] = [
  { name: 'by_creation', key: { workspaceId: 1, object: 1, createdPosition: 1, id: 1 } },
  { name: 'by_updated', key: { workspaceId: 1, object: 1, updatedMs: 1 } },
  { name: 'by_name', key: { workspaceId: 1, object: 1, nameKey: 1, createdPosition: 1, id: 1 } },
  { name: 'by_filter', key: { workspaceId: 1, object: 1, filterKeys: 1, createdPosition: 1, id: 1 } },
];

// ---------------------------------------------------------------------------------------------
// Link edges (port.ts LinkEdge): one document per edge, keyed so that adding it again is a no-op.

export const LINK_EDGES = 'linkEdges';

export interface MongoLinkEdge {
  _id: string;
  workspaceId: string;
  target: string;
  object: string;
  field: string;
  id: string;
}

export function toMongoLinkEdge(edge: LinkEdge): MongoLinkEdge {
  return {
    _id: JSON.stringify([edge.workspaceId, edge.target, edge.object, edge.field, edge.id]),
    workspaceId: edge.workspaceId,
    target: edge.target,
    object: edge.object,
    field: edge.field,
    id: edge.id,
  };
}

/** Starts with workspaceId, like every read model index (the shard key). */
export const LINK_EDGE_INDEXES: IndexDescription[] = [{ name: 'by_target', key: { workspaceId: 1, target: 1, object: 1, field: 1 } }];
