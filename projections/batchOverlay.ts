import type { FieldFilter, LinkEdge, ReadTransaction, RecordDocument } from '../src/readstore/port.js';
import type { Position } from '../src/eventstore/position.js';

/**
 * The bulk path of a read model's batch (the live projector's and a rebuild's): a batch's document
 * changes are kept here and written once per record at the end of the batch, instead of one
 * read-modify-write of the store per event. A record created and changed three times in one batch
 * is one write, and a record the batch touches again is read from here, not from the store. Where
 * the store reads many records at once (`getMany`, a server away), what the projection reads ahead
 * is kept here too, so the batch costs a few round trips rather than two per event. The
 * projection's own `apply` runs over it unchanged (one implementation of the read model);
 * `findAll` sees the batch's changes because they are written first.
 */

const keyOf = (workspaceId: string, object: string, id: string) => `${workspaceId}\u0000${object}\u0000${id}`;

export class BatchOverlay implements ReadTransaction {
  /** The batch's latest document per record; null: deleted in this batch. Insertion order is first-touch order. */
  private readonly changed = new Map<string, { workspaceId: string; object: string; id: string; document: RecordDocument | null }>();

  /** Documents as the store held them before the batch, read ahead (null: no such record). */
  private readonly read = new Map<string, RecordDocument | null>();

  /** Only where the store has a bulk read: elsewhere reading ahead would only double the gets. */
  readonly getMany?: (workspaceId: string, object: string, ids: string[]) => Promise<RecordDocument[]>;

  constructor(private readonly tx: ReadTransaction) {
    if (tx.getMany) this.getMany = (workspaceId, object, ids) => this.readAhead(workspaceId, object, ids);
  }

  async get(workspaceId: string, object: string, id: string): Promise<RecordDocument | null> {
    const key = keyOf(workspaceId, object, id);
    const known = this.changed.get(key);
    if (known) return known.document;
    const read = this.read.get(key);
    return read !== undefined ? read : this.tx.get(workspaceId, object, id);
  }

  /** Reads the records not known yet in one call, remembers them (and those that do not exist), answers them as the batch sees them. */
  private async readAhead(workspaceId: string, object: string, ids: string[]): Promise<RecordDocument[]> {
    const unknown = [...new Set(ids)].filter((id) => !this.changed.has(keyOf(workspaceId, object, id)) && !this.read.has(keyOf(workspaceId, object, id)));
    if (unknown.length > 0) {
      const found = await this.tx.getMany!(workspaceId, object, unknown);
      for (const id of unknown) this.read.set(keyOf(workspaceId, object, id), null);
      for (const document of found) this.read.set(keyOf(workspaceId, object, document.id), document);
    }
    const documents: RecordDocument[] = [];
    for (const id of new Set(ids)) {
      const document = await this.get(workspaceId, object, id);
      if (document) documents.push(document);
    }
    return documents;
  }

  async findAll(workspaceId: string, object: string, filters: FieldFilter[]): Promise<RecordDocument[]> {
    await this.flush();
    return this.tx.findAll(workspaceId, object, filters);
  }

  async putMany(documents: RecordDocument[]): Promise<void> {
    for (const document of documents) await this.put(document);
  }

  async put(document: RecordDocument): Promise<void> {
    this.changed.set(keyOf(document.workspaceId, document.object, document.id), { workspaceId: document.workspaceId, object: document.object, id: document.id, document });
  }

  async delete(workspaceId: string, object: string, id: string): Promise<void> {
    this.changed.set(keyOf(workspaceId, object, id), { workspaceId, object, id, document: null });
  }

  addLinks(edges: LinkEdge[]): Promise<void> {
    return this.tx.addLinks(edges);
  }

  checkpoint(projection: string): Promise<Position | null> {
    return this.tx.checkpoint(projection);
  }

  setCheckpoint(projection: string, position: Position): Promise<void> {
    return this.tx.setCheckpoint(projection, position);
  }

  /** Writes what the batch changed, once per record, in the order the batch first touched them. */
  async flush(): Promise<void> {
    const documents: RecordDocument[] = [];
    for (const { workspaceId, object, id, document } of this.changed.values()) {
      if (document) documents.push(document);
      else await this.tx.delete(workspaceId, object, id);
    }
    this.changed.clear();
    if (documents.length > 0) await this.tx.putMany(documents);
  }
}
