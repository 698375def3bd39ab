import type { FieldFilter, LinkEdge, ReadTransaction, RecordDocument } from '../src/readstore/port.js';
import type { Position } from '../src/eventstore/position.js';

/**
 * The rebuild's bulk path: a batch's document changes are kept here and written once per record at
 * the end of the batch, instead of one read-modify-write of the store per event. A record created
 * and changed three times in one batch is one write, and a record the batch touches again is read
 * from here, not from the store. The projection's own `apply` runs over it unchanged (one
 * implementation of the read model); `findAll` sees the batch's changes because they are written
 * first.
 */

const keyOf = (workspaceId: string, object: string, id: string) => `${workspaceId}\u0000${object}\u0000${id}`;

export class BatchOverlay implements ReadTransaction {
  /** The batch's latest document per record; null: deleted in this batch. Insertion order is first-touch order. */
  private readonly changed = new Map<string, { workspaceId: string; object: string; id: string; document: RecordDocument | null }>();

  constructor(private readonly tx: ReadTransaction) {}

  async get(workspaceId: string, object: string, id: string): Promise<RecordDocument | null> {
    const known = this.changed.get(keyOf(workspaceId, object, id));
    return known ? known.document : this.tx.get(workspaceId, object, id);
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
