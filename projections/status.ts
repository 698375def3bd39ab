import type { EventFilter, EventStore } from '../src/eventstore/port.js';
import type { Position } from '../src/eventstore/position.js';
import type { ReadStore, RunnerStatus } from '../src/readstore/port.js';
import { eventsUpTo } from './logRange.js';
import type { Follower } from './projection.js';

/**
 * `csr projections status` (and the Setup page): every follower of the registry (registry.ts):
 * the projections (and the generation a rebuild is filling), the reactors, and the webhook
 * fan-out's persistent subscription group, read from the stores alone,
 * so it answers the same whether the server runs or not.
 */

export type ProjectionState = 'live' | 'catching-up' | 'rebuilding' | 'failed';

export interface ProjectionStatus {
  name: string;
  kind: Follower['kind'];
  /** Null for the webhook fan-out, which has no read model to version. */
  version: Follower['version'];
  /** The read model generation this row is about (null for reactors, which have none). */
  generation: number | null;
  state: ProjectionState;
  checkpoint: Position | null;
  head: Position | null;
  /** Events of the projection's streams after its checkpoint (counted up to LAG_COUNT_LIMIT). */
  lagEvents: number;
  /** How long the oldest event it has not applied has been waiting (0 when none). */
  lagMs: number;
  eventsPerSecond: number;
  lastError: string | null;
  lastErrorAt: string | null;
}

export interface StatusReport {
  head: Position | null;
  at: string;
  projections: ProjectionStatus[];
}

/** Counting lag stops here: past it the answer is "at least this many". */
export const LAG_COUNT_LIMIT = 100_000;
/** A projection whose oldest waiting event is younger than this is live. */
export const LIVE_LAG_MS = 5_000;
/** A status older than this says nothing about the current rate (its runner has stopped). */
const STALE_STATUS_MS = 70_000;

/** The events after `from` that `filter` takes, up to `limit`, and the log time of the first of them. */
export async function lagAfter(
  events: EventStore,
  from: Position | null,
  filter: EventFilter,
  limit = LAG_COUNT_LIMIT,
): Promise<{ events: number; oldest: Date | null }> {
  const head = await events.headPosition();
  if (head === null || (from !== null && from >= head)) return { events: 0, oldest: null };
  let count = 0;
  let oldest: Date | null = null;
  for await (const event of eventsUpTo(events, from, filter, head)) {
    oldest ??= event.created;
    if (++count >= limit) break;
  }
  return { events: count, oldest };
}

function rateOf(status: RunnerStatus | undefined, now: number): number {
  if (!status || now - Date.parse(status.updatedAt) > STALE_STATUS_MS) return 0;
  return status.eventsPerSecond;
}

async function row(
  deps: { events: EventStore },
  projection: Follower,
  generation: number | null,
  checkpoint: Position | null,
  runner: RunnerStatus | undefined,
  rebuilding: boolean,
  head: Position | null,
  now: number,
): Promise<ProjectionStatus> {
  const lag = await lagAfter(deps.events, checkpoint, projection.filter);
  const lagMs = lag.oldest ? Math.max(0, now - lag.oldest.getTime()) : 0;
  const state: ProjectionState = runner?.failing
    ? 'failed'
    : rebuilding
      ? 'rebuilding'
      : lag.events === 0 || lagMs <= LIVE_LAG_MS
        ? 'live'
        : 'catching-up';
  return {
    name: projection.name,
    kind: projection.kind,
    version: projection.version,
    generation,
    state,
    checkpoint,
    head,
    lagEvents: lag.events,
    lagMs,
    eventsPerSecond: rateOf(runner, now),
    lastError: runner?.lastError ?? null,
    lastErrorAt: runner?.lastErrorAt ?? null,
  };
}

export async function projectionStatus(
  deps: { events: EventStore; readStore: ReadStore },
  followers: readonly Follower[],
): Promise<StatusReport> {
  const now = Date.now();
  const [head, generations, runners] = await Promise.all([deps.events.headPosition(), deps.readStore.generations(), deps.readStore.runnerStatuses()]);
  const runner = (name: string) => runners.find((status) => status.name === name);
  const rows: ProjectionStatus[] = [];
  for (const projection of followers) {
    if (projection.kind === 'fan-out') {
      // A group that does not exist yet (no dispatcher ever ran) starts at the end of the log when made: no row.
      const group = await deps.events.groupCheckpoint(projection.name);
      if (group) rows.push(await row(deps, projection, null, group.position, runner(projection.name), false, head, now));
      continue;
    }
    const readModel = projection.kind === 'read-model';
    const checkpoint = await deps.readStore.checkpoint(projection.name);
    rows.push(await row(deps, projection, readModel ? generations.live : null, checkpoint, runner(projection.name), false, head, now));
    if (readModel && generations.building) {
      const building = { ...projection, version: Number(generations.building.version) || projection.version };
      const rebuild = runner(`${projection.name}#rebuild`);
      rows.push(await row(deps, building, generations.building.generation, generations.building.position, rebuild, true, head, now));
    }
  }
  return { head, at: new Date(now).toISOString(), projections: rows };
}
