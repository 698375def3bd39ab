import type Database from 'better-sqlite3';
import { filterKey, filterKeys } from '../../schema/filterKey.js';
import type { RecordDocument, Values } from '../port.js';
import { collOn, epochMs, type StatementCache, type StoredRow, type Tables } from './connection.js';
import { positionLayoutOf, type PositionLayout, type StoredPosition } from './positions.js';

/** "field\0key" for every filter key of a document's fields and calculated values. */
export function keysOf(fields: Values, calculated: Values): Set<string> {
  const keys = new Set<string>();
  for (const values of [fields, calculated]) {
    for (const [field, value] of Object.entries(values)) {
      for (const key of filterKeys(value)) keys.add(`${field}\u0000${key}`);
    }
  }
  return keys;
}

/** name, name_key, fields, calculated, created_at, updated_at, updated_ms, created_position, revision, rendered. */
type DocumentValues = [string | null, string | null, string, string, string, string, number, StoredPosition, number, string | null];
const CREATED_POSITION = 7;

/** Keys writeCounts remembers having a counts row, at most: a field's shared values (industries, statuses), not every value. */
const COUNTED_KEYS = 10_000;

/** A document's key in the writer's memo of what its transaction found absent. */
function documentKey(workspaceId: string, object: string, id: string): string {
  return `${workspaceId}\u0000${object}\u0000${id}`;
}

function splitKey(fieldKey: string): [string, string] {
  const at = fieldKey.indexOf('\u0000');
  return [fieldKey.slice(0, at), fieldKey.slice(at + 1)];
}

/**
 * The write side of a projection transaction: documents, their filter rows and the counts kept of
 * both. The caller runs it between BEGIN and COMMIT, and tells it how the transaction ended.
 */
export class DocumentWriter {
  private readonly t: Tables;
  private readonly positions: PositionLayout;
  private readonly insertCollection;
  private readonly countDocuments;
  private readonly storedRow;
  private readonly insertDocument;
  private readonly storedDocId;
  private readonly updateDocument;
  private readonly deleteDocument;
  private readonly insertFilter;
  private readonly deleteFilter;
  private readonly countUp;
  private readonly probeCount;
  private readonly insertCount;
  private readonly dropSmallCount;
  private readonly countDown;

  /**
   * Collection ids of the write side, remembered only once committed: an id created in a
   * transaction that rolls back must not outlive it (see rolledBack).
   */
  private readonly writeColls = new Map<string, number>();
  private readonly collsOfTransaction = new Map<string, number>();

  /**
   * filter_counts and collection document count changes of the open transaction, summed per
   * "coll\0field\0key" (per coll) and written by writeCounts: a batch of 500 new records then
   * updates each count once, not 500 times.
   */
  private readonly countChanges = new Map<string, { coll: number; field: string; key: string; delta: number }>();
  private readonly documentCountChanges = new Map<number, number>();
  /** "coll\0field\0key" of keys last seen with a counts row (writeCounts). */
  private readonly counted = new Set<string>();

  /** A generation being bulk-loaded (bulkLoad.ts): documents only, no filter rows, no counts. */
  bulk = false;

  /**
   * Records the open transaction looked up and did not find: their document is inserted without
   * looking it up again. The projection looks every record it changes up first (batchOverlay.ts),
   * inside the transaction's write lock, or, for a rebuild's lazy batch, in a generation no other
   * transaction writes; so a record found absent stays absent until this writer puts it.
   */
  private readonly absent = new Set<string>();

  constructor(
    write: Database.Database,
    private readonly cache: StatementCache,
    tables: Tables,
  ) {
    this.t = tables;
    const t = tables;
    this.positions = positionLayoutOf(write, t.documents);
    this.insertCollection = write.prepare(`INSERT INTO ${t.collections} (workspace_id, object) VALUES (?, ?) ON CONFLICT DO NOTHING`);
    this.countDocuments = write.prepare(`UPDATE ${t.collections} SET documents = documents + ? WHERE coll = ?`);
    this.storedRow = write.prepare(`SELECT doc_id, fields, calculated, created_position FROM ${t.documents} WHERE coll = ? AND id = ?`);
    // Positional values: binding a dozen named ones looked each name up on the values' object
    // (docs/performance.md, session 38).
    this.insertDocument = write.prepare(`
    INSERT INTO ${t.documents} (coll, id, name, name_key, fields, calculated, created_at, updated_at, updated_ms, created_position, revision, rendered)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
    this.storedDocId = write.prepare(`SELECT doc_id FROM ${t.documents} WHERE coll = ? AND id = ?`).pluck();
    this.updateDocument = write.prepare(`
    UPDATE ${t.documents} SET name = ?, name_key = ?, fields = ?, calculated = ?, created_at = ?, updated_at = ?, updated_ms = ?, created_position = ?, revision = ?, rendered = ?
    WHERE doc_id = ?`);
    this.deleteDocument = write.prepare(`DELETE FROM ${t.documents} WHERE doc_id = ?`);
    this.insertFilter = write.prepare(`INSERT INTO ${t.filters} (coll, field, key, created_position, doc_id) VALUES (?, ?, ?, ?, ?)`);
    this.deleteFilter = write.prepare(
      `DELETE FROM ${t.filters} WHERE coll = ? AND field = ? AND key = ? AND created_position = ? AND doc_id = ?`,
    );
    this.countUp = write.prepare(`UPDATE ${t.filterCounts} SET n = n + ? WHERE coll = ? AND field = ? AND key = ?`);
    // coalesce evaluates its arguments in turn: the key's filter rows are counted only when it has no counts row.
    this.probeCount = write
      .prepare(
        `SELECT coalesce((SELECT n FROM ${t.filterCounts} WHERE coll = ? AND field = ? AND key = ?),
          -1 - (SELECT COUNT(*) FROM ${t.filters} WHERE coll = ? AND field = ? AND key = ?))`,
      )
      .pluck();
    this.insertCount = write.prepare(`INSERT INTO ${t.filterCounts} (coll, field, key, n) VALUES (?, ?, ?, ?)`);
    this.dropSmallCount = write.prepare(`DELETE FROM ${t.filterCounts} WHERE coll = ? AND field = ? AND key = ? AND n <= ?`);
    this.countDown = write.prepare(`UPDATE ${t.filterCounts} SET n = n - ? WHERE coll = ? AND field = ? AND key = ?`);
  }

  coll(workspaceId: string, object: string, create: boolean): number | null {
    const name = `${workspaceId}\u0000${object}`;
    const known = this.writeColls.get(name) ?? this.collsOfTransaction.get(name);
    if (known !== undefined) return known;
    if (create) this.insertCollection.run(workspaceId, object);
    const coll = collOn(this.cache, this.t, workspaceId, object);
    if (coll === null) return null;
    this.collsOfTransaction.set(name, coll);
    return coll;
  }

  /**
   * Before anything reads the counts, and before COMMIT. A key's count is kept only once it has
   * two filter rows or more: most keys of a unique value (a name, an email) have one, and its
   * counts row was a second insert at a random place of a B-tree for every record created, for a
   * count the key's range of `filters` tells as cheaply, its row having just been written there
   * (findPlan.ts, filterCount). A row of one, from before, stays valid.
   */
  writeCounts(): void {
    for (const [name, { coll, field, key, delta }] of this.countChanges) {
      if (delta > 0) {
        // A key seen with a counts row is counted up at once; any other is probed first, in one
        // statement that tells its row or else counts its filter rows: most keys counted up are
        // new unique values (a name, a number), whose UPDATE would miss.
        if (this.counted.has(name) && this.countUp.run(delta, coll, field, key).changes > 0) continue;
        const probed = this.probeCount.get(coll, field, key, coll, field, key) as number;
        if (probed >= 0) {
          this.countUp.run(delta, coll, field, key);
          this.remember(name);
          continue;
        }
        // No row: the key had one filter row at most before this transaction.
        const rows = -1 - probed;
        if (rows >= 2) {
          this.insertCount.run(coll, field, key, rows);
          this.remember(name);
        }
      } else if (delta < 0 && this.dropSmallCount.run(coll, field, key, 1 - delta).changes === 0) {
        // A row left with two or more is counted down; a key without one has none left to count.
        this.countDown.run(-delta, coll, field, key);
      }
    }
    this.countChanges.clear();
    for (const [coll, delta] of this.documentCountChanges) if (delta !== 0) this.countDocuments.run(delta, coll);
    this.documentCountChanges.clear();
  }

  /** A key that has a counts row now: a hint only, checked by the UPDATE's changes. */
  private remember(name: string): void {
    if (this.counted.size >= COUNTED_KEYS) this.counted.clear();
    this.counted.add(name);
  }

  /** A look-up of the open transaction found no such document. */
  lookedUpAbsent(workspaceId: string, object: string, id: string): void {
    this.absent.add(documentKey(workspaceId, object, id));
  }

  /** After COMMIT: the transaction's collection ids now exist for good. */
  committed(): void {
    this.absent.clear();
    for (const [name, coll] of this.collsOfTransaction) this.writeColls.set(name, coll);
    this.collsOfTransaction.clear();
  }

  /** Before ROLLBACK: nothing of the transaction may be written or remembered later. */
  rolledBack(): void {
    this.absent.clear();
    this.countChanges.clear();
    this.documentCountChanges.clear();
    this.collsOfTransaction.clear();
  }

  /** Replaces the document; only the filter rows of values that changed are rewritten. */
  put(document: RecordDocument): void {
    if (this.bulk) return this.putBulk(document);
    const coll = this.coll(document.workspaceId, document.object, true)!;
    const values = this.documentValues(document);
    const createdPosition = values[CREATED_POSITION];
    // A created record's document was just looked up by the projection (batchOverlay.ts) and not found.
    const absent = this.absent.delete(documentKey(document.workspaceId, document.object, document.id));
    const stored = absent ? undefined : (this.storedRow.get(coll, document.id) as StoredRow | undefined);
    const keys = keysOf(document.fields, document.calculated);
    if (!stored) {
      const docId = Number(this.insertDocument.run(coll, document.id, ...values).lastInsertRowid);
      this.addFilters(coll, keys, createdPosition, docId);
      this.changeDocumentCount(coll, 1);
      return;
    }
    this.updateDocument.run(...values, stored.doc_id);
    const storedKeys = keysOf(JSON.parse(stored.fields) as Values, JSON.parse(stored.calculated) as Values);
    if (stored.created_position !== createdPosition) {
      this.removeFilters(coll, storedKeys, stored.created_position, stored.doc_id);
      this.addFilters(coll, keys, createdPosition, stored.doc_id);
      return;
    }
    this.removeFilters(coll, [...storedKeys].filter((key) => !keys.has(key)), stored.created_position, stored.doc_id);
    this.addFilters(coll, [...keys].filter((key) => !storedKeys.has(key)), stored.created_position, stored.doc_id);
  }

  /** The document alone (bulk load): an insert, or an update of the row found. */
  private putBulk(document: RecordDocument): void {
    const coll = this.coll(document.workspaceId, document.object, true)!;
    const values = this.documentValues(document);
    const absent = this.absent.delete(documentKey(document.workspaceId, document.object, document.id));
    const docId = absent ? undefined : (this.storedDocId.get(coll, document.id) as number | undefined);
    if (docId === undefined) this.insertDocument.run(coll, document.id, ...values);
    else this.updateDocument.run(...values, docId);
  }

  /** A document's columns after coll and id, in the order insertDocument and updateDocument bind them. */
  private documentValues(document: RecordDocument): DocumentValues {
    return [
      document.name,
      document.name === null ? null : filterKey(document.name),
      JSON.stringify(document.fields),
      JSON.stringify(document.calculated),
      document.createdAt,
      document.updatedAt,
      epochMs(document.updatedAt, 'updatedAt'),
      this.positions.stored(document.createdPosition),
      document.revision,
      document.rendered ?? null,
    ];
  }

  remove(workspaceId: string, object: string, id: string): void {
    const coll = this.coll(workspaceId, object, false);
    if (coll === null) return;
    const stored = this.storedRow.get(coll, id) as StoredRow | undefined;
    if (!stored) return;
    this.deleteDocument.run(stored.doc_id);
    if (this.bulk) return;
    const storedKeys = keysOf(JSON.parse(stored.fields) as Values, JSON.parse(stored.calculated) as Values);
    this.removeFilters(coll, storedKeys, stored.created_position, stored.doc_id);
    this.changeDocumentCount(coll, -1);
  }

  private changeDocumentCount(coll: number, delta: number): void {
    this.documentCountChanges.set(coll, (this.documentCountChanges.get(coll) ?? 0) + delta);
  }

  private changeCount(coll: number, field: string, key: string, delta: number): void {
    const name = `${coll}\u0000${field}\u0000${key}`;
    const change = this.countChanges.get(name);
    if (change) change.delta += delta;
    else this.countChanges.set(name, { coll, field, key, delta });
  }

  private removeFilters(coll: number, keys: Iterable<string>, createdPosition: StoredPosition, docId: number): void {
    for (const fieldKey of keys) {
      const [field, key] = splitKey(fieldKey);
      this.deleteFilter.run(coll, field, key, createdPosition, docId);
      this.changeCount(coll, field, key, -1);
    }
  }

  private addFilters(coll: number, keys: Iterable<string>, createdPosition: StoredPosition, docId: number): void {
    for (const fieldKey of keys) {
      const [field, key] = splitKey(fieldKey);
      this.insertFilter.run(coll, field, key, createdPosition, docId);
      this.changeCount(coll, field, key, 1);
    }
  }
}
