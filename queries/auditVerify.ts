import { RECORD_STREAM_PREFIX } from '../src/events/records.js';
import { canonicalJson } from '../src/eventstore/chain.js';
import { ChainCheck, type ChainBreak } from '../src/eventstore/chainCheck.js';
import type { EventStore, RecordedEvent } from '../src/eventstore/port.js';
import { hasReached, type Position } from '../src/eventstore/position.js';
import { RECORDS_PROJECTION, type ReadStore, type RecordDocument, type Values } from '../src/readstore/port.js';
import { ownCalculations, rollups } from '../src/schema/calculated.js';
import { RecordFold } from './fold.js';

/**
 * `csr audit verify` (docs/auditing.md): one pass over the whole log re-checks the hash chain and
 * folds every record's stream (up to the records read model's checkpoint); then every record is
 * compared with its read model document: fields, name, times, revision, and calculated values
 * re-derived from the folded records (roll-ups from their children). Read model documents of
 * the same workspaces and objects that the log does not know are reported too.
 */

export interface Difference {
  workspaceId: string;
  object: string;
  id: string;
  problem: string;
}

export interface VerifyResult {
  ok: boolean;
  scope: 'log' | 'stream';
  events: number;
  chained: number;
  /** Events written before the chain began (not covered). */
  unchained: number;
  head: string;
  firstBreak: ChainBreak | null;
  /** Records compared with the read model. */
  records: number;
  differences: Difference[];
}

const PAGE = 2000;

/** What the chain check of the log up to a position found. */
export interface ChainSummary {
  events: number;
  chained: number;
  unchained: number;
  head: string;
  firstBreak: ChainBreak | null;
}

/** Reads the log up to `until` (inclusive) page by page, giving each event to `each`; answers the count. */
async function eachEvent(events: EventStore, until: Position | null, each: (event: RecordedEvent) => void, progress?: (events: number) => void): Promise<number> {
  let count = 0;
  for (let from: Position | 'start' = 'start'; until !== null; ) {
    const page = await events.readAll({ from, maxCount: PAGE });
    for (const event of page) {
      if (event.position > until) return count;
      each(event);
      count += 1;
    }
    if (page.length === 0) return count;
    from = page.at(-1)!.position;
    progress?.(count);
  }
  return count;
}

/** The chain check alone, up to `until`: the CLI runs it in a thread of its own, beside the fold. */
export async function checkChain(events: EventStore, until: Position | null): Promise<ChainSummary> {
  const chain = new ChainCheck(events.chainScope);
  const count = await eachEvent(events, until, (event) => chain.add(event));
  return { events: count, chained: chain.chained, unchained: chain.unchained, head: chain.head, firstBreak: chain.firstBreak };
}

export interface VerifyOptions {
  workspaceId?: string;
  progress?: (events: number) => void;
  /** Checks the chain up to the given head elsewhere (a worker thread); by default in the same pass as the fold. */
  chain?: (until: Position | null) => Promise<ChainSummary>;
}

export async function verifyAudit(deps: { events: EventStore; readStore: Pick<ReadStore, 'checkpoint' | 'getMany' | 'find'> }, options: VerifyOptions = {}): Promise<VerifyResult> {
  const checkpoint = await deps.readStore.checkpoint(RECORDS_PROJECTION);
  // Both passes stop at the head as it is now: appends made meanwhile are for the next run.
  const until = await deps.events.headPosition();
  const inline = options.chain ? null : new ChainCheck(deps.events.chainScope);
  const elsewhere = options.chain?.(until);
  const folds = new Map<string, RecordFold>();
  const count = await eachEvent(
    deps.events,
    until,
    (event) => {
      inline?.add(event);
      if (!event.stream.startsWith(RECORD_STREAM_PREFIX) || !hasReached(checkpoint, event.position)) return;
      if (options.workspaceId !== undefined && event.data['workspaceId'] !== options.workspaceId) return;
      let fold = folds.get(event.stream);
      if (!fold) folds.set(event.stream, (fold = new RecordFold()));
      fold.add(event);
    },
    options.progress,
  );
  const differences = await compare(deps.readStore, folds);
  const chain: ChainSummary = elsewhere
    ? await elsewhere
    : { events: count, chained: inline!.chained, unchained: inline!.unchained, head: inline!.head, firstBreak: inline!.firstBreak };
  return {
    ok: chain.firstBreak === null && differences.length === 0,
    scope: deps.events.chainScope,
    events: chain.events,
    chained: chain.chained,
    unchained: chain.unchained,
    head: chain.head,
    firstBreak: chain.firstBreak,
    records: folds.size,
    differences,
  };
}

type Folded = ReturnType<RecordFold['result']> & { workspaceId: string; object: string; id: string };

async function compare(readStore: Pick<ReadStore, 'getMany' | 'find'>, folds: Map<string, RecordFold>): Promise<Difference[]> {
  const groups = new Map<string, Folded[]>();
  const live = new Map<string, Folded>();
  for (const [stream, fold] of folds) {
    const result = fold.result();
    const { workspaceId, object, id } = fold.address ?? { workspaceId: '', object: '', id: stream.slice(RECORD_STREAM_PREFIX.length) };
    const folded: Folded = { ...result, workspaceId, object, id };
    const key = `${workspaceId}\u0000${object}`;
    groups.get(key)?.push(folded) ?? groups.set(key, [folded]);
    if (result.document) live.set(`${workspaceId}/${object}/${id}`, folded);
  }
  const calculated = expectedCalculations(live);
  const differences: Difference[] = [];
  for (const [key, records] of groups) {
    const [workspaceId, object] = key.split('\u0000') as [string, string];
    for (let i = 0; i < records.length; i += 500) {
      const chunk = records.slice(i, i + 500);
      const found = new Map((await readStore.getMany(workspaceId, object, chunk.map((record) => record.id))).map((document) => [document.id, document]));
      for (const record of chunk) {
        const problem = differs(record, found.get(record.id), calculated);
        if (problem) differences.push({ workspaceId, object, id: record.id, problem });
      }
    }
    // Documents the log does not know (a row added by hand).
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
