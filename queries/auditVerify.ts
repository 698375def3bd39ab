import type { ChainBreak } from '../src/eventstore/chainCheck.js';
import type { EventStore } from '../src/eventstore/port.js';
import { RECORDS_PROJECTION, type ReadStore } from '../src/readstore/port.js';
import { loadCatalogue } from '../src/schema/catalogues.js';
import { checkLog, groupKey, type LogPassOptions } from './logPass.js';
import { ReadModelCheck, type Difference, type ObjectLookup } from './readModelCheck.js';

export type { Difference } from './readModelCheck.js';
export type { LogSummary } from './logPass.js';

/**
 * `csr audit verify` (docs/auditing.md), in two halves that run interleaved on one thread (they
 * take turns at each page read) and each hold a page at a time, never the store: the log pass re-checks the hash chain over the whole log and counts
 * the live records of each object (logPass.ts); the read model check compares every document of
 * every object with its own stream folded up to the records read model's checkpoint, calculated
 * values included (readModelCheck.ts). Where the counts say the read model lacks records, the log
 * is searched for them.
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
  const passOptions: LogPassOptions = { checkpoint, workspaceId: options.workspaceId };
  const logPass = checkLog(deps.events, until, passOptions);
  logPass.catch(() => undefined);

  const check = new ReadModelCheck(deps, checkpoint, options.progress);
  const present = new Map<string, number>();
  const workspaces = options.workspaceId !== undefined ? [options.workspaceId] : (await deps.setup.listWorkspaces()).map((workspace) => workspace.id);
  const lookups = new Map<string, ObjectLookup>();
  const lookup = async (workspaceId: string) => {
    let found = lookups.get(workspaceId);
    if (!found) {
      const catalogue = await loadCatalogue(deps.events, workspaceId);
      lookups.set(workspaceId, (found = (object) => catalogue.object(object)));
    }
    return found;
  };
  const checkObject = async (workspaceId: string, object: string) => {
    present.set(groupKey(workspaceId, object), await check.documents(workspaceId, object, await lookup(workspaceId)));
  };
  for (const workspaceId of workspaces) {
    for (const object of (await loadCatalogue(deps.events, workspaceId)).objects) await checkObject(workspaceId, object.key);
  }

  const log = await logPass;
  // Objects the log has records of that no catalogue lists any more: their documents too.
  for (const key of Object.keys(log.live)) {
    if (present.has(key)) continue;
    const [workspaceId, object] = key.split('\u0000') as [string, string];
    await checkObject(workspaceId, object);
  }
  for (const [key, live] of Object.entries(log.live)) {
    if (live === (present.get(key) ?? 0)) continue;
    const [workspaceId, object] = key.split('\u0000') as [string, string];
    await check.missing(workspaceId, object, until);
  }
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
