import type { ChainBreak, EventStore } from '../src/eventstore/port.js';
import { RECORDS_PROJECTION, type ReadStore } from '../src/readstore/port.js';
import { loadCatalogue } from '../src/setup/catalogues.js';
import { ReadModelCheck, type Difference, type ObjectLookup } from './readModelCheck.js';

export type { Difference } from './readModelCheck.js';

/**
 * `csr audit verify` (docs/auditing.md), in two halves that take turns on one thread (a page at a
 * time each, never the store in memory): the event store re-checks the hash chain over the whole
 * log its own fastest way (EventStore.checkChain), and the read model check folds every record
 * stream up to the records read model's checkpoint and compares it with its document, calculated
 * values included (readModelCheck.ts), then looks for documents no stream led to.
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

export interface VerifyOptions {
  workspaceId?: string;
  /** Told the number of records checked so far, a page at a time. */
  progress?: (records: number) => void;
}

export async function verifyAudit(
  deps: { events: EventStore; readStore: Pick<ReadStore, 'checkpoint' | 'getMany' | 'find'>; setup: { listWorkspaces(): Promise<{ id: string }[]> } },
  options: VerifyOptions = {},
): Promise<VerifyResult> {
  const checkpoint = await deps.readStore.checkpoint(RECORDS_PROJECTION);
  // Both halves stop at the head as it is now: appends made meanwhile are for the next run.
  const until = await deps.events.headPosition();
  const chain = deps.events.checkChain({ until });
  chain.catch(() => undefined);

  const lookups = new Map<string, Promise<ObjectLookup>>();
  const objectsOf = (workspaceId: string) => {
    let found = lookups.get(workspaceId);
    if (!found) lookups.set(workspaceId, (found = loadCatalogue(deps.events, workspaceId).then((catalogue) => (object: string) => catalogue.object(object))));
    return found;
  };
  const check = new ReadModelCheck(deps, checkpoint, objectsOf, options.workspaceId, options.progress);
  await check.streams();
  // Documents no record stream led to, in every object a catalogue lists or the log has records of.
  const workspaces = options.workspaceId !== undefined ? [options.workspaceId] : (await deps.setup.listWorkspaces()).map((workspace) => workspace.id);
  const objects = new Map<string, [string, string]>();
  for (const workspaceId of workspaces) {
    for (const object of (await loadCatalogue(deps.events, workspaceId)).objects) objects.set(`${workspaceId}\u0000${object.key}`, [workspaceId, object.key]);
  }
  for (const [workspaceId, object] of check.objects()) objects.set(`${workspaceId}\u0000${object}`, [workspaceId, object]);
  for (const [workspaceId, object] of objects.values()) await check.strays(workspaceId, object);

  const log = await chain;
  return {
    ok: log.firstBreak === null && check.differences.length === 0,
    scope: deps.events.chainScope,
    events: log.events,
    chained: log.chained,
    unchained: log.unchained,
    head: log.head,
    firstBreak: log.firstBreak,
    records: check.records,
    differences: check.differences,
  };
}
