import { RECORD_STREAM_PREFIX, recordStream } from '../src/events/records.js';
import { canonicalJson } from '../src/eventstore/chain.js';
import type { EventStore } from '../src/eventstore/port.js';
import { hasReached, type Position } from '../src/eventstore/position.js';
import { filterKey } from '../src/readstore/filterKey.js';
import type { ReadStore, RecordDocument, Values } from '../src/readstore/port.js';
import { ownCalculations, rollups } from '../src/schema/calculated.js';
import type { ObjectDef } from '../src/schema/catalogue.js';
import { RecordFold } from './fold.js';

/**
 * The read model half of `csr audit verify`, one object at a time and a page of documents at a
 * time, so memory stays flat however large the store: every document is compared with its own
 * stream folded up to the records read model's checkpoint (fields, name, times, revision) and its
 * calculated values re-derived (roll-ups from its children's documents, each of which is checked
 * against its own stream too). Documents the log does not know are found on the way; records the
 * log has but the read model lacks are looked for only where the log's count of live records says
 * some are missing (`missing`).
 */

export interface Difference {
  workspaceId: string;
  object: string;
  id: string;
  problem: string;
}

const PAGE = 500;

export type ObjectLookup = (object: string) => ObjectDef | undefined;

export class ReadModelCheck {
  readonly differences: Difference[] = [];
  /** Records compared. */
  records = 0;

  constructor(
    private readonly deps: { events: EventStore; readStore: Pick<ReadStore, 'find' | 'getMany'> },
    private readonly checkpoint: Position | null,
    private readonly progress?: (records: number) => void,
  ) {}

  /** Checks every document of the object; answers how many of them are live records in the log. */
  async documents(workspaceId: string, object: string, objectOf: ObjectLookup): Promise<number> {
    let present = 0;
    for (let offset = 0; ; offset += PAGE) {
      const page = await this.deps.readStore.find({ workspaceId, object, filters: [], limit: PAGE, offset });
      for (const document of page.documents) {
        const { fold, last } = await this.fold(document.id);
        const address = fold.address;
        const known = address !== null && address.workspaceId === workspaceId && address.object === object;
        const folded = known ? fold.result(objectOf).document : null;
        if (folded) present += 1;
        this.records += 1;
        // The projector moved on after verification read its checkpoint, to events that exist: nothing to compare against.
        if (document.revision > fold.revision && document.revision <= last) continue;
        const problem = !known
          ? 'in the read model, but no such record in the log'
          : !folded
            ? 'deleted in the log, but still in the read model'
            : await this.differs(folded, document);
        if (problem) this.differences.push({ workspaceId, object, id: document.id, problem });
      }
      this.progress?.(this.records);
      if (page.documents.length < PAGE) return present;
    }
  }

  /**
   * Records of the object that are live in the log but have no document: the log's record
   * creations of the object, looked up a page at a time (only run when the counts differ).
   */
  async missing(workspaceId: string, object: string, until: Position | null): Promise<void> {
    let ids: string[] = [];
    const flush = async () => {
      const found = new Set((await this.deps.readStore.getMany(workspaceId, object, ids)).map((document) => document.id));
      for (const id of ids) {
        if (found.has(id) || !(await this.fold(id)).fold.result().document) continue;
        this.records += 1;
        this.differences.push({ workspaceId, object, id, problem: 'in the log, but missing from the read model' });
      }
      ids = [];
    };
    for (let from: Position | 'start' = 'start'; until !== null; ) {
      const page = await this.deps.events.readAll({ from, maxCount: 2000, filter: { streamPrefixes: [RECORD_STREAM_PREFIX] } });
      for (const event of page) {
        if (event.position > until || !hasReached(this.checkpoint, event.position)) break;
        const data = event.data as { workspaceId?: unknown; object?: unknown; recordId?: unknown };
        if (event.type === 'RecordCreated' && data.workspaceId === workspaceId && data.object === object) ids.push(String(data.recordId));
        if (ids.length >= PAGE) await flush();
      }
      if (page.length === 0 || page.at(-1)!.position > until || !hasReached(this.checkpoint, page.at(-1)!.position)) break;
      from = page.at(-1)!.position;
    }
    if (ids.length > 0) await flush();
  }

  /** The record's stream folded up to the checkpoint, and the revision of its last event of all (-1: none). */
  private async fold(id: string): Promise<{ fold: RecordFold; last: number }> {
    const fold = new RecordFold();
    const stream = await this.deps.events.readStream(recordStream(id));
    for (const event of stream) {
      if (!hasReached(this.checkpoint, event.position)) break;
      fold.add(event);
    }
    return { fold, last: stream.at(-1)?.revision ?? -1 };
  }

  private async differs(expected: NonNullable<ReturnType<RecordFold['result']>['document']>, document: RecordDocument): Promise<string | null> {
    const wrong: string[] = [];
    for (const key of ['name', 'createdAt', 'updatedAt', 'revision'] as const) {
      if (expected[key] !== document[key]) wrong.push(key);
    }
    for (const key of new Set([...Object.keys(expected.fields), ...Object.keys(document.fields)])) {
      if (!same(expected.fields[key], document.fields[key])) wrong.push(key);
    }
    const values = await this.calculated(expected.workspaceId, expected.object, expected.id, expected.fields);
    for (const key of new Set([...Object.keys(values), ...Object.keys(document.calculated)])) {
      if (!same(values[key], document.calculated[key])) wrong.push(key);
    }
    return wrong.length === 0 ? null : `the read model differs from the log in: ${wrong.join(', ')}`;
  }

  /** Calculated values as the projection derives them: roll-ups from the children's documents. */
  private async calculated(workspaceId: string, object: string, id: string, fields: Values): Promise<Values> {
    const rolledUp: Values = {};
    const children = new Map<string, Values[]>();
    for (const rollup of rollups) {
      if (rollup.object !== object) continue;
      const key = `${rollup.source}\u0000${rollup.via}`;
      let kids = children.get(key);
      if (!kids) children.set(key, (kids = await this.children(workspaceId, rollup.source, rollup.via, id)));
      rolledUp[rollup.field] = rollup.compute(kids);
    }
    return { ...rolledUp, ...ownCalculations(object, { ...fields, ...rolledUp }) };
  }

  private async children(workspaceId: string, source: string, via: string, parent: string): Promise<Values[]> {
    const found: Values[] = [];
    for (let offset = 0; ; offset += 1000) {
      const page = await this.deps.readStore.find({ workspaceId, object: source, filters: [{ field: via, value: filterKey(parent) }], limit: 1000, offset });
      for (const child of page.documents) if (child.fields[via] === parent) found.push({ ...child.fields, ...child.calculated });
      if (page.documents.length < 1000) return found;
    }
  }
}

function same(a: unknown, b: unknown): boolean {
  return canonicalJson(a ?? null) === canonicalJson(b ?? null);
}
