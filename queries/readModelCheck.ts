import { RECORD_STREAM_PREFIX } from '../src/events/records.js';
import { canonicalJson } from '../src/eventstore/chain.js';
import type { ReadStore, RecordDocument, Values } from '../src/readstore/port.js';
import { ownCalculations, rollups } from '../src/schema/calculated.js';
import { defaultObject, type ObjectDef } from '../src/schema/catalogue.js';
import type { RecordFold } from './fold.js';

/**
 * The second half of `csr audit verify`: records folded from the log against the read model.
 * Every folded record is compared with its document (fields, name, times, revision, calculated
 * values re-derived from the folded records, roll-ups from their children), and documents of the
 * same workspaces and objects that the log does not know are reported.
 */

export interface Difference {
  workspaceId: string;
  object: string;
  id: string;
  problem: string;
}

type Folded = ReturnType<RecordFold['result']> & { workspaceId: string; object: string; id: string };

/** `objectOf`: a workspace's object definitions, for record names (custom objects included). */
export async function compare(
  readStore: Pick<ReadStore, 'getMany' | 'find'>,
  folds: Map<string, RecordFold>,
  objectOf: (workspaceId: string) => Promise<(object: string) => ObjectDef | undefined> = async () => defaultObject,
): Promise<Difference[]> {
  const lookups = new Map<string, (object: string) => ObjectDef | undefined>();
  const groups = new Map<string, Folded[]>();
  const live = new Map<string, Folded>();
  for (const [stream, fold] of folds) {
    const { workspaceId, object, id } = fold.address ?? { workspaceId: '', object: '', id: stream.slice(RECORD_STREAM_PREFIX.length) };
    let lookup = lookups.get(workspaceId);
    if (!lookup) lookups.set(workspaceId, (lookup = await objectOf(workspaceId)));
    const result = fold.result(lookup);
    const folded: Folded = { ...result, workspaceId, object, id };
    const key = `${workspaceId}\u0000${object}`;
    groups.get(key)?.push(folded) ?? groups.set(key, [folded]);
    if (result.document) live.set(`${workspaceId}/${object}/${id}`, folded);
  }
  const calculated = expectedCalculations(live);
  const differences: Difference[] = [];
  for (const [key, records] of groups) {
    const [workspaceId, object] = key.split('\u0000') as [string, string];
    let present = 0;
    for (let i = 0; i < records.length; i += 500) {
      const chunk = records.slice(i, i + 500);
      const found = new Map((await readStore.getMany(workspaceId, object, chunk.map((record) => record.id))).map((document) => [document.id, document]));
      present += found.size;
      for (const record of chunk) {
        const problem = differs(record, found.get(record.id), calculated);
        if (problem) differences.push({ workspaceId, object, id: record.id, problem });
      }
    }
    // Documents the log does not know (a row added by hand): only looked for when the count says there are some.
    if ((await readStore.find({ workspaceId, object, filters: [], limit: 1, offset: 0 })).total === present) continue;
    const known = new Set(records.map((record) => record.id));
    for (let offset = 0; ; offset += 1000) {
      const page = await readStore.find({ workspaceId, object, filters: [], limit: 1000, offset });
      for (const document of page.documents) {
        if (!known.has(document.id)) differences.push({ workspaceId, object, id: document.id, problem: 'in the read model, but no such record in the log' });
      }
      if (page.documents.length < 1000) break;
    }
  }
  return differences;
}

function differs(record: Folded, document: RecordDocument | undefined, calculated: (record: Folded) => Values): string | null {
  const expected = record.document;
  if (!expected) return document ? 'deleted in the log, but still in the read model' : null;
  if (!document) return 'in the log, but missing from the read model';
  // The projector moved on after verification read its checkpoint: nothing to compare against.
  if (document.revision > record.revision) return null;
  const wrong: string[] = [];
  for (const key of ['name', 'createdAt', 'updatedAt', 'revision'] as const) {
    if (expected[key] !== document[key]) wrong.push(key);
  }
  for (const key of new Set([...Object.keys(expected.fields), ...Object.keys(document.fields)])) {
    if (!same(expected.fields[key], document.fields[key])) wrong.push(key);
  }
  const values = calculated(record);
  for (const key of new Set([...Object.keys(values), ...Object.keys(document.calculated)])) {
    if (!same(values[key], document.calculated[key])) wrong.push(key);
  }
  return wrong.length === 0 ? null : `the read model differs from the log in: ${wrong.join(', ')}`;
}

function same(a: unknown, b: unknown): boolean {
  return canonicalJson(a ?? null) === canonicalJson(b ?? null);
}

/** Calculated values as the projection derives them, roll-ups from the folded children (memoised). */
function expectedCalculations(live: Map<string, Folded>): (record: Folded) => Values {
  const children = new Map<string, Folded[]>();
  for (const record of live.values()) {
    for (const rollup of rollups) {
      const parent = rollup.source === record.object ? record.document!.fields[rollup.via] : undefined;
      if (typeof parent !== 'string') continue;
      const key = `${record.workspaceId}/${rollup.object}/${parent}/${rollup.field}`;
      children.get(key)?.push(record) ?? children.set(key, [record]);
    }
  }
  const memo = new Map<Folded, Values>();
  const calculate = (record: Folded): Values => {
    const known = memo.get(record);
    if (known) return known;
    const fields = record.document!.fields;
    const rolledUp: Values = {};
    for (const rollup of rollups) {
      if (rollup.object !== record.object) continue;
      const kids = children.get(`${record.workspaceId}/${record.object}/${record.id}/${rollup.field}`) ?? [];
      rolledUp[rollup.field] = rollup.compute(kids.map((kid) => ({ ...kid.document!.fields, ...calculate(kid) })));
    }
    const values = { ...rolledUp, ...ownCalculations(record.object, { ...fields, ...rolledUp }) };
    memo.set(record, values);
    return values;
  };
  return calculate;
}
