import { RECORD_STREAM_PREFIX } from '../src/events/records.js';
import { ChainCheck, type ChainBreak } from '../src/eventstore/chainCheck.js';
import type { EventStore, RecordedEvent } from '../src/eventstore/port.js';
import { hasReached, type Position } from '../src/eventstore/position.js';
import { RECORDS_PROJECTION, type ReadStore } from '../src/readstore/port.js';
import { RecordFold } from './fold.js';
import { compare, type Difference } from './readModelCheck.js';
import { loadCatalogue } from '../src/schema/catalogues.js';

export type { Difference } from './readModelCheck.js';

/**
 * `csr audit verify` (docs/auditing.md): one pass over the whole log re-checks the hash chain and
 * folds every record's stream (up to the records read model's checkpoint); then every record is
 * compared with its read model document: fields, name, times, revision, and calculated values
 * re-derived from the folded records (roll-ups from their children). Read model documents of
 * the same workspaces and objects that the log does not know are reported too.
 */

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
  const differences = await compare(deps.readStore, folds, async (workspaceId) => {
    const catalogue = await loadCatalogue(deps.events, workspaceId);
    return (object) => catalogue.object(object);
  });
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

