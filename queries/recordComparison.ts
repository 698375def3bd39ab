import { canonicalJson } from '../src/eventstore/chain.js';
import { filterKey } from '../src/schema/filterKey.js';
import type { ReadStore, RecordDocument, Values } from '../src/readstore/port.js';
import { ownCalculations, rollups } from '../src/schema/calculated.js';
import type { FoldedRecord } from './fold.js';

/**
 * One record's document against what its stream folds to (`csr audit verify`): fields, name,
 * times, revision, and the calculated values as the projection derives them (roll-ups from the
 * children's documents). The children of an object with few documents are read once and kept
 * (up to CHILDREN_KEPT documents in all, so memory stays flat); otherwise each parent's are
 * looked up on their own.
 */

const CHILDREN_KEPT = 10_000;
const CHILDREN_PAGE = 1000;

export class RecordComparison {
  /** "workspace\0source\0via" -> parent id -> its children's values; null: too many to keep. */
  private readonly kept = new Map<string, Map<string, Values[]> | null>();
  private keptCount = 0;

  constructor(private readonly readStore: Pick<ReadStore, 'find'>) {}

  async differs(expected: NonNullable<FoldedRecord['document']>, document: RecordDocument): Promise<string | null> {
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
    const key = `${workspaceId}\u0000${source}\u0000${via}`;
    let kept = this.kept.get(key);
    if (kept === undefined) this.kept.set(key, (kept = await this.keep(workspaceId, source, via)));
    if (kept !== null) return kept.get(parent) ?? [];
    return this.find(workspaceId, source, via, parent);
  }

  /** All children of the source object by parent, when there are few enough to keep. */
  private async keep(workspaceId: string, source: string, via: string): Promise<Map<string, Values[]> | null> {
    const { total } = await this.readStore.find({ workspaceId, object: source, filters: [], limit: 1, offset: 0 });
    if (total > CHILDREN_KEPT) return null;
    if (this.keptCount + total > CHILDREN_KEPT) {
      this.kept.clear();
      this.keptCount = 0;
    }
    const byParent = new Map<string, Values[]>();
    for (let offset = 0; ; offset += CHILDREN_PAGE) {
      const page = await this.readStore.find({ workspaceId, object: source, filters: [], limit: CHILDREN_PAGE, offset });
      for (const child of page.documents) {
        const parent = child.fields[via];
        if (typeof parent !== 'string') continue;
        let list = byParent.get(parent);
        if (!list) byParent.set(parent, (list = []));
        list.push({ ...child.fields, ...child.calculated });
      }
      this.keptCount += page.documents.length;
      if (page.documents.length < CHILDREN_PAGE) return byParent;
    }
  }

  private async find(workspaceId: string, source: string, via: string, parent: string): Promise<Values[]> {
    const found: Values[] = [];
    for (let offset = 0; ; offset += CHILDREN_PAGE) {
      const page = await this.readStore.find({ workspaceId, object: source, filters: [{ field: via, value: filterKey(parent) }], limit: CHILDREN_PAGE, offset });
      for (const child of page.documents) if (child.fields[via] === parent) found.push({ ...child.fields, ...child.calculated });
      if (page.documents.length < CHILDREN_PAGE) return found;
    }
  }
}

function same(a: unknown, b: unknown): boolean {
  return canonicalJson(a ?? null) === canonicalJson(b ?? null);
}
