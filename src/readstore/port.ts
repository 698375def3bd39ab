import type { Position } from '../eventstore/position.js';

/**
 * The read model port: projected documents per workspace and object. Written only by
 * projections (inside `transaction`, together with their checkpoint), read by queries.
 * Every adapter passes test/contract/readstore.contract.ts.
 */

/** A stored field value: links are ids, link lists arrays of ids, people user ids, dates strings. */
export type StoredValue = string | number | boolean | string[] | null;

export type Values = Record<string, StoredValue>;

export interface RecordDocument {
  workspaceId: string;
  object: string;
  id: string;
  /** The record name (PRODUCT.md section 3), used for matching and for links' `name`. */
  name: string | null;
  /** Field values as written (no calculated values). */
  fields: Values;
  /** Calculated values that do not depend on today's date (own formulas and roll-ups). */
  calculated: Values;
  /** Log time of the record's first event, ISO 8601 with milliseconds. */
  createdAt: string;
  /** Log time of the last event of the record's own stream. */
  updatedAt: string;
  /** Log position of the record's first event: records are listed in this order. */
  createdPosition: Position;
  /** Revision of the last event of the record's stream applied to this document. */
  revision: number;
}

/**
 * Exact, case-insensitive filter on one field (of `fields` or `calculated`). `value` is already
 * normalised with `filterKey`; an array field matches when any element matches.
 */
export interface FieldFilter {
  field: string;
  value: string;
}

export interface FindQuery {
  workspaceId: string;
  object: string;
  filters: FieldFilter[];
  /** Exact, case-insensitive match on the record name. */
  name?: string;
  /** Strictly after this ISO 8601 moment. */
  updatedSince?: string;
  limit: number;
  offset: number;
}

export interface FindResult {
  documents: RecordDocument[];
  /** All documents matching the query, regardless of limit and offset. */
  total: number;
}

/**
 * "Record `id` of `object` linked `target` through `field`" at some moment: kept by the records
 * projection for the link fields roll-ups follow, never removed, so that reads as of a past moment
 * find children that have since been deleted or moved (queries/asOf.ts). Rebuilt with the records.
 */
export interface LinkEdge {
  workspaceId: string;
  object: string;
  field: string;
  id: string;
  target: string;
}

export interface ReadTransaction {
  get(workspaceId: string, object: string, id: string): Promise<RecordDocument | null>;
  /** Every document of the object matching all filters (used for roll-ups), in creation order. */
  findAll(workspaceId: string, object: string, filters: FieldFilter[]): Promise<RecordDocument[]>;
  put(document: RecordDocument): Promise<void>;
  /** Records link edges; one already known is a no-op. */
  addLinks(edges: LinkEdge[]): Promise<void>;
  delete(workspaceId: string, object: string, id: string): Promise<void>;
  checkpoint(projection: string): Promise<Position | null>;
  setCheckpoint(projection: string, position: Position): Promise<void>;
}

export interface ReadStore {
  find(query: FindQuery): Promise<FindResult>;
  get(workspaceId: string, object: string, id: string): Promise<RecordDocument | null>;
  /** The documents with these ids that exist (any order). */
  getMany(workspaceId: string, object: string, ids: string[]): Promise<RecordDocument[]>;
  /** Ids of the records of `object` that ever linked `target` through `field` (any order). */
  linkSources(workspaceId: string, object: string, field: string, target: string): Promise<string[]>;
  checkpoint(projection: string): Promise<Position | null>;
  /**
   * Resolves true once the projection's checkpoint has reached `position` (also when another
   * process moves it), false after `timeoutMs`.
   */
  waitForCheckpoint(projection: string, position: Position, timeoutMs: number): Promise<boolean>;
  /** Runs `fn` atomically: all its writes and its checkpoint commit together or not at all. */
  transaction<T>(fn: (tx: ReadTransaction) => Promise<T>): Promise<T>;
  /** Drops every document, link edge and the checkpoint of a projection, so that it rebuilds from the log. */
  reset(projection: string): Promise<void>;
  close(): Promise<void>;
}

/** The projection that builds the records read model; writes wait for its checkpoint (read your writes). */
export const RECORDS_PROJECTION = 'records';
