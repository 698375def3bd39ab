import type { Position } from '../eventstore/position.js';
import type { Values } from '../schema/values.js';

/**
 * The read model port: projected documents per workspace and object. Written only by
 * projections (inside `transaction`, together with their checkpoint), read by queries.
 * Every adapter passes test/contract/readstore.contract.ts.
 */

// The stored values are the schema's vocabulary (src/schema/values.ts); the port speaks it, and
// its adapters and users may keep importing them from here.
export { sameStoredValue, type StoredValue, type Values } from '../schema/values.js';

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
  /**
   * The record's REST JSON with its splice points (src/readstore/rendering.ts), as the records
   * projection rendered it; absent or null: none (read time renders from the document).
   */
  rendered?: string | null;
}

/** A document as a reader of its stored rendering gets it: the rest is parsed only if asked for. */
export interface StoredRecord {
  id: string;
  rendered: string | null;
  /**
   * The document's revision (its stream's last applied event): the ETag of GET one record
   * (docs/sync-clients.md). getStored and getStoredNow always give it; findStored may leave it out.
   */
  revision?: number;
  /** Null only for a record whose rendering starts with the `shape` given to the read (its fields were not read). */
  document: (() => RecordDocument) | null;
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

export interface FindStoredResult {
  records: StoredRecord[];
  /** As FindResult's. */
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
  /**
   * `get` of many records of one object at once, those that exist (any order): one round trip where
   * the store is a server away (PostgreSQL), instead of one per record. Absent where a `get` answers
   * without waiting (the embedded store); callers then get one by one.
   */
  getMany?(workspaceId: string, object: string, ids: string[]): Promise<RecordDocument[]>;
  /** Every document of the object matching all filters (used for roll-ups), in creation order. */
  findAll(workspaceId: string, object: string, filters: FieldFilter[]): Promise<RecordDocument[]>;
  put(document: RecordDocument): Promise<void>;
  /** `put` of many documents of different records at once (a rebuild's batch): one bulk write where the store has one. */
  putMany(documents: RecordDocument[]): Promise<void>;
  /** Records link edges; one already known is a no-op. */
  addLinks(edges: LinkEdge[]): Promise<void>;
  delete(workspaceId: string, object: string, id: string): Promise<void>;
  checkpoint(projection: string): Promise<Position | null>;
  setCheckpoint(projection: string, position: Position): Promise<void>;
}

/**
 * Blue/green rebuilds: the read model lives in numbered generations. The live one answers reads and
 * follows the log; a rebuild fills another one beside it from the start of the log and, once it
 * has caught up, `promoteGeneration` makes it the live one in one atomic step.
 */
export interface Generations {
  live: number;
  /** The projection version that built the live generation (null: recorded by no version yet). */
  liveVersion: string | null;
  building: BuildingGeneration | null;
}

export interface BuildingGeneration {
  generation: number;
  version: string;
  /** Checkpoint of the generation being built (null: nothing applied yet). */
  position: Position | null;
  /** Who builds it (e.g. `host:pid`), as given to beginGeneration. */
  owner: string;
  startedAt: string;
}

export interface BeginGeneration {
  version: string;
  owner: string;
  /** Drop the generation being built, if any, and start a new one from the start of the log. */
  restart: boolean;
  /** Whether the builder named by an earlier owner still runs (then beginGeneration refuses). */
  ownerAlive(owner: string): boolean;
}

/** What a projection runner (or a rebuild) last said about itself, for `csr projections status`. */
export interface RunnerStatus {
  /** The projection's name; a rebuild's status is `<name>#rebuild`. */
  name: string;
  /** Events applied per second over the last minute. */
  eventsPerSecond: number;
  lastError: string | null;
  lastErrorAt: string | null;
  /** The last attempt failed and no batch has committed since. */
  failing: boolean;
  updatedAt: string;
}

/** Finds a server store's findEach sends at once when it cannot send them together: a few of its pooled connections, not all of them. */
export const FINDS_IN_FLIGHT = 4;

export interface ReadStore {
  find(query: FindQuery): Promise<FindResult>;
  /**
   * `find` for each query, the answers in the queries' order (an upsert's matches): the embedded
   * store answers them all from one read transaction, PostgreSQL sends finds by name together in
   * a few statements, and other finds a few at a time (src/core/inFlight.ts).
   */
  findEach(queries: readonly FindQuery[]): Promise<FindResult[]>;
  get(workspaceId: string, object: string, id: string): Promise<RecordDocument | null>;
  /**
   * `get` for a reader of the stored rendering (a GET of one record): the document is parsed only
   * if asked for. `shape`: as findStored's, a record whose rendering starts with it may come
   * without its document.
   */
  getStored(workspaceId: string, object: string, id: string, shape?: string): Promise<StoredRecord | null>;
  /**
   * What getStored would answer, when the store can tell without waiting (a synchronous driver);
   * undefined when it must be asked. Never older than getStored's answer would be. `shape`: as
   * findStored's, a record whose rendering starts with it may come without its document.
   */
  getStoredNow(workspaceId: string, object: string, id: string, shape?: string): StoredRecord | null | undefined;
  /**
   * `find` for a reader of the stored renderings (a list). `shape`: the reader uses renderings
   * that start with it as they are, so the store may leave out those records' documents.
   */
  findStored(query: FindQuery, shape?: string): Promise<FindStoredResult>;
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
  /**
   * Runs `fn` atomically: all its writes and its checkpoint commit together or not at all. With
   * `generation` (the one being built), documents and checkpoints go to that generation, not the
   * live one; it fails if that generation is no longer being built.
   */
  transaction<T>(fn: (tx: ReadTransaction) => Promise<T>, options?: { generation?: number }): Promise<T>;
  generations(): Promise<Generations>;
  /** Resumes the generation being built for `version`, or starts a new one (empty, no checkpoint). */
  beginGeneration(options: BeginGeneration): Promise<BuildingGeneration & { resumed: boolean }>;
  /**
   * In one transaction of `generation`: `catchUp(tx, from, to)` applies the events after its
   * checkpoint up to the live checkpoint of `projection` (only called when behind), then the
   * generation becomes the live one, with that checkpoint. Reads switch to it atomically. An
   * adapter may call `catchUp` in a batch of its own before (so that the switch has less to do).
   */
  promoteGeneration(
    generation: number,
    projection: string,
    catchUp: (tx: ReadTransaction, from: Position | null, to: Position) => Promise<void>,
  ): Promise<void>;
  /** Drops every generation that is neither live nor being built; answers how many. */
  dropUnusedGenerations(): Promise<number>;
  /** Keeps a runner's status (one per name, replaced); written every few seconds, not per batch. */
  saveRunnerStatus(status: RunnerStatus): Promise<void>;
  runnerStatuses(): Promise<RunnerStatus[]>;
  /** Records the version of the live generation (a new store, or one made before versions). */
  setLiveVersion(version: string): Promise<void>;
  /** Drops every document, link edge and the checkpoint of a projection, so that it rebuilds from the log. */
  reset(projection: string): Promise<void>;
  close(): Promise<void>;
}

/** The projection that builds the records read model; writes wait for its checkpoint (read your writes). */
export const RECORDS_PROJECTION = 'records';

/**
 * What a transaction of a generation being built fails with when that build is no longer the one
 * under way (stopped, or restarted by another rebuild): every adapter says it alike.
 */
export const REBUILD_SUPERSEDED = 'this rebuild was stopped or restarted by another one; the live read model is untouched';
