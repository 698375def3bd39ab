import { RECORD_STREAM_PREFIX, recordStream } from '../src/events/records.js';
import type { EventStore, StreamEvent } from '../src/eventstore/port.js';
import { hasReached, type Position } from '../src/eventstore/position.js';
import type { ReadStore, RecordDocument } from '../src/readstore/port.js';
import type { ObjectDef } from '../src/schema/catalogue.js';
import { RecordFold } from './fold.js';
import { RecordComparison } from './recordComparison.js';

/**
 * The read model half of `csr audit verify`, a page at a time so memory stays flat however large
 * the store. Driven by the log: every record stream (EventStore.readStreams, a page of whole
 * streams at a time) is folded up to the records read model's checkpoint and compared with its
 * document (fields, name, times, revision, calculated values: recordComparison.ts), the page's
 * documents fetched together per object. Documents no record stream leads to (a record the log
 * does not have, or has as another object) are looked for only where an object's documents
 * outnumber those the streams found (`strays`).
 */

export interface Difference {
  workspaceId: string;
  object: string;
  id: string;
  problem: string;
}

const PAGE = 500;
const DOCUMENTS_PAGE = 500;

export type ObjectLookup = (object: string) => ObjectDef | undefined;

const groupKey = (workspaceId: string, object: string) => `${workspaceId}\u0000${object}`;

interface Folded {
  fold: RecordFold;
  /** Revision of the stream's last event of all (past the checkpoint too). */
  last: number;
  /** Whether the record was deleted after the checkpoint. */
  deletedLater: boolean;
}

export class ReadModelCheck {
  readonly differences: Difference[] = [];
  /** Records compared. */
  records = 0;
  /** Per workspace and object: the documents the record streams led to. */
  private readonly found = new Map<string, number>();
  private readonly compare: RecordComparison;

  constructor(
    private readonly deps: { events: EventStore; readStore: Pick<ReadStore, 'find' | 'getMany'> },
    private readonly checkpoint: Position | null,
    private readonly objectsOf: (workspaceId: string) => Promise<ObjectLookup>,
    private readonly workspaceId?: string,
    private readonly progress?: (records: number) => void,
  ) {
    this.compare = new RecordComparison(deps.readStore);
  }

  /** The (workspace, object) pairs the record streams had records of. */
  objects(): Array<[workspaceId: string, object: string]> {
    return [...this.found.keys()].map((key) => key.split('\u0000') as [string, string]);
  }

  /** Every record stream of the log against its document. */
  async streams(): Promise<void> {
    for (let from: string | null = 'start'; from !== null; ) {
      const page = await this.deps.events.readStreams({ prefix: RECORD_STREAM_PREFIX, from, maxCount: PAGE });
      const groups = new Map<string, Folded[]>();
      for (const stream of page.streams) {
        const folded = this.fold(stream);
        const address = folded.fold.address;
        // No creation up to the checkpoint: nothing the read model may show yet.
        if (address === null || (this.workspaceId !== undefined && address.workspaceId !== this.workspaceId)) continue;
        const key = groupKey(address.workspaceId, address.object);
        let group = groups.get(key);
        if (!group) groups.set(key, (group = []));
        group.push(folded);
      }
      for (const [key, group] of groups) await this.compareGroup(key, group);
      this.progress?.(this.records);
      from = page.next;
    }
  }

  private async compareGroup(key: string, group: Folded[]): Promise<void> {
    const [workspaceId, object] = key.split('\u0000') as [string, string];
    const objectOf = await this.objectsOf(workspaceId);
    const documents = await this.deps.readStore.getMany(workspaceId, object, group.map(({ fold }) => fold.address!.id));
    const byId = new Map(documents.map((document) => [document.id, document]));
    this.found.set(key, (this.found.get(key) ?? 0) + documents.length);
    for (const { fold, last, deletedLater } of group) {
      const id = fold.address!.id;
      const document = byId.get(id);
      const folded = fold.result(objectOf).document;
      if (!folded && !document) continue;
      this.records += 1;
      if (await this.movedOn(id, document, fold, last, deletedLater)) continue;
      const problem = !document
        ? 'in the log, but missing from the read model'
        : !folded
          ? 'deleted in the log, but still in the read model'
          : await this.compare.differs(folded, document);
      if (problem) this.differences.push({ workspaceId, object, id, problem });
    }
  }

  /**
   * The projector moved on after verification read its checkpoint, to events that exist: nothing
   * to compare against. Events appended after the stream was read count too (a write during the
   * check); the stream is read again only then, when the document is ahead of what was read.
   */
  private async movedOn(id: string, document: RecordDocument | undefined, fold: RecordFold, last: number, deletedLater: boolean): Promise<boolean> {
    const again = async () => this.fold(await this.deps.events.readStream(recordStream(id)));
    if (!document) return deletedLater || (await again()).deletedLater;
    if (document.revision <= fold.revision) return false;
    return document.revision <= last || document.revision <= (await again()).last;
  }

  /**
   * Documents of the object no record stream led to: only looked for when the object has more
   * documents than the streams found, then a page of documents at a time, each against its own stream.
   */
  async strays(workspaceId: string, object: string): Promise<void> {
    const { total } = await this.deps.readStore.find({ workspaceId, object, filters: [], limit: 1, offset: 0 });
    if (total <= (this.found.get(groupKey(workspaceId, object)) ?? 0)) return;
    for (let offset = 0; ; offset += DOCUMENTS_PAGE) {
      const page = await this.deps.readStore.find({ workspaceId, object, filters: [], limit: DOCUMENTS_PAGE, offset });
      for (const document of page.documents) await this.stray(document);
      if (page.documents.length < DOCUMENTS_PAGE) return;
    }
  }

  private async stray(document: RecordDocument): Promise<void> {
    const { fold, last } = this.fold(await this.deps.events.readStream(recordStream(document.id)));
    const address = fold.address;
    // Its stream leads here: compared with the streams already.
    if (address !== null && address.workspaceId === document.workspaceId && address.object === document.object) return;
    this.records += 1;
    if (document.revision > fold.revision && document.revision <= last) return;
    this.differences.push({ workspaceId: document.workspaceId, object: document.object, id: document.id, problem: 'in the read model, but no such record in the log' });
  }

  /** A record's stream folded up to the checkpoint. */
  private fold(stream: StreamEvent[]): Folded {
    const fold = new RecordFold();
    let deletedLater = false;
    for (const event of stream) {
      if (hasReached(this.checkpoint, event.position)) fold.add(event);
      else if (event.type === 'RecordDeleted') deletedLater = true;
    }
    return { fold, last: stream.at(-1)?.revision ?? -1, deletedLater };
  }
}
