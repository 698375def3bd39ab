import { upcast } from '../../src/events/records.js';
import type { RecordedEvent } from '../../src/eventstore/port.js';
import { todayUtc } from '../../src/schema/dates.js';
import { awaitRecords, Serial } from '../awaitRecords.js';
import { backgroundReactor } from '../backgroundReactor.js';
import { followerOf, type Follower, type Projection } from '../projection.js';
import type { ReactorDeps } from '../reactorDeps.js';
import { affectedBy, readsCurrent } from './affected.js';
import { healthScore } from '../../src/schema/healthScore.js';
import { findAllDocuments, loadHealthInputs } from './inputs.js';

/**
 * The health score reactor (PRODUCT.md "Health score"): a projection over record events that
 * appends `clients.healthScore` (source `health score`) for every client whose inputs changed,
 * and, once a day, for every client (the date-relative inputs move by themselves). The score is
 * a function of the current records, so a replayed batch computes the same numbers and appends
 * nothing: an unchanged score appends no event.
 */

export const HEALTH_SCORE_REACTOR = 'health score';
/** Its entry in the registry of followers (projections/registry.ts): name, kind, version. */
export const HEALTH_SCORE_FOLLOWER: Follower = followerOf(backgroundReactor(HEALTH_SCORE_REACTOR, 1));

/** Clients scored between two turns of the event loop. */
const SCORE_SLICE = 20;

export interface HealthScoreReactor extends Projection {
  /** Recomputes every client of the workspace (the daily pass). */
  sweep(workspaceId: string): Promise<void>;
}

export function healthScoreReactor(deps: ReactorDeps): HealthScoreReactor {
  const logger = deps.logger.child({ reactor: HEALTH_SCORE_REACTOR });
  const serial = new Serial();

  async function clientsOf(events: RecordedEvent[]): Promise<Map<string, Set<string>>> {
    const dirty = new Map<string, Set<string>>();
    const mark = (workspaceId: string, id: string) => {
      let set = dirty.get(workspaceId);
      if (!set) dirty.set(workspaceId, (set = new Set()));
      set.add(id);
    };
    for (const event of events) {
      const recordEvent = upcast(event);
      if (!recordEvent) continue;
      const { workspaceId, object, recordId } = recordEvent.data;
      const current = readsCurrent(recordEvent) ? await deps.readStore.get(workspaceId, object, recordId) : null;
      const affected = affectedBy(recordEvent, current);
      for (const client of affected.clients) mark(workspaceId, client);
      for (const via of affected.via) {
        const linked = await deps.readStore.get(workspaceId, via.object, via.id);
        const client = linked?.fields['client'];
        if (typeof client === 'string') mark(workspaceId, client);
      }
    }
    return dirty;
  }

  async function recompute(workspaceId: string, clientIds: Iterable<string>): Promise<void> {
    const today = todayUtc(deps.clock());
    const scores: [string, number][] = [];
    let computed = 0;
    for (const clientId of clientIds) {
      // The reads below answer at once (settled promises): without a turn of the event loop now
      // and then, scoring a thousand new clients would hold up the records projection that runs
      // in this thread, and with it every write waiting to be visible.
      if (++computed % SCORE_SLICE === 0) await new Promise((resolve) => setImmediate(resolve));
      scores.push([clientId, healthScore(await loadHealthInputs(deps.readStore, workspaceId, clientId, today), today)]);
    }
    await deps.writeHealthScores(workspaceId, scores);
  }

  return {
    ...backgroundReactor(HEALTH_SCORE_REACTOR, HEALTH_SCORE_FOLLOWER.version!),
    react(events, stopped) {
      return serial.run(async () => {
        await awaitRecords(deps.readStore, events.at(-1)!.position, stopped);
        for (const [workspaceId, clients] of await clientsOf(events)) await recompute(workspaceId, clients);
      });
    },
    // Without waiting: what the read model does not show yet, a reaction recomputes afterwards
    // (the two take turns, so a pass never overwrites a newer reaction's score).
    sweep(workspaceId) {
      return serial.run(async () => {
        const clients = await findAllDocuments(deps.readStore, workspaceId, 'clients', []);
        logger.debug({ workspaceId, clients: clients.length }, 'daily health score pass');
        await recompute(workspaceId, clients.map((client) => client.id));
      });
    },
  };
}
