import type { Metrics } from '../src/core/metrics.js';
import type { ReadinessCheck } from '../src/core/readiness.js';
import type { EventStore } from '../src/eventstore/port.js';
import type { Position } from '../src/eventstore/position.js';
import type { ReadStore } from '../src/readstore/port.js';
import type { Follower } from './projection.js';
import { lagAfter } from './status.js';

/** Projection lag for /health/ready and /metrics, read from the stores (any process, any role). */

/** Lag is counted up to here when scraped or probed: enough to alert on, cheap to read. */
const PROBE_LIMIT = 10_000;

type Deps = { events: EventStore; readStore: ReadStore };

async function lagOf(deps: Deps, projection: Pick<Follower, 'name' | 'filter'>): Promise<{ events: number; seconds: number }> {
  const checkpoint = await deps.readStore.checkpoint(projection.name);
  const lag = await lagAfter(deps.events, checkpoint, projection.filter, PROBE_LIMIT);
  return { events: lag.events, seconds: lag.oldest ? Math.max(0, Date.now() - lag.oldest.getTime()) / 1000 : 0 };
}

/**
 * What the last probe learnt of one projection, for the checkpoint it read: its oldest unapplied
 * event, or a position up to which the log holds nothing it has not applied.
 */
interface Probed {
  checkpoint: Position | null;
  oldest: Date | null;
  events: number;
  clearTo: Position | null;
}

/**
 * The lag as a probe needs it, without reading the same stretch of the log again: a projection
 * whose filter matches rarely keeps an old checkpoint, and reading from there to the head on every
 * probe (every few seconds, in every API process) scanned the log from that checkpoint each time,
 * which EventStoreDB does on the server for a filtered read. While the checkpoint stays, an
 * unapplied event found before stays the oldest; and a stretch found empty stays empty (the log
 * only grows at its head: the port's positions never fill in behind headPosition), so the next
 * probe reads only what came after it. The count is then a lower bound, which a probe's message
 * needs no better.
 */
async function probedLag(deps: Deps, projection: Pick<Follower, 'name' | 'filter'>, memo: Map<string, Probed>): Promise<{ events: number; seconds: number }> {
  const checkpoint = await deps.readStore.checkpoint(projection.name);
  const before = memo.get(projection.name);
  const known = before !== undefined && before.checkpoint === checkpoint ? before : null;
  const age = (oldest: Date | null) => (oldest ? Math.max(0, Date.now() - oldest.getTime()) / 1000 : 0);
  if (known?.oldest) return { events: known.events, seconds: age(known.oldest) };
  const head = await deps.events.headPosition();
  const from = known?.clearTo ?? checkpoint;
  const lag = await lagAfter(deps.events, from, projection.filter, PROBE_LIMIT);
  memo.set(projection.name, { checkpoint, oldest: lag.oldest, events: lag.events, clearTo: lag.oldest ? null : (head ?? from) });
  return { events: lag.events, seconds: age(lag.oldest) };
}

/** A runner's status older than this says nothing about now (its process is gone). */
const FRESH_STATUS_MS = 60_000;

/**
 * Ready while every projection's oldest unapplied event is younger than `maxLagMs`, and no runner
 * says that its last batch failed: a projector that cannot write (a full disk) is said at once,
 * with its error, not only once its lag has grown past the bound.
 */
export function projectionLagCheck(deps: Deps, projections: readonly Pick<Follower, 'name' | 'filter'>[], maxLagMs: number): ReadinessCheck {
  const memo = new Map<string, Probed>();
  return {
    name: 'projections',
    async check() {
      const behind: string[] = [];
      const statuses = new Map((await deps.readStore.runnerStatuses()).map((status) => [status.name, status]));
      for (const projection of projections) {
        const status = statuses.get(projection.name);
        if (status?.failing && Date.now() - Date.parse(status.updatedAt) < FRESH_STATUS_MS) {
          behind.push(`${projection.name} fails to apply events: ${status.lastError} (retrying every second)`);
          continue;
        }
        const lag = await probedLag(deps, projection, memo);
        if (lag.seconds * 1000 > maxLagMs) behind.push(`${projection.name} is ${lag.events} events (${Math.round(lag.seconds)} s) behind the log`);
      }
      return behind.length === 0 ? null : behind.join('; ');
    },
  };
}

/** A fan-out's lag, from its consumer group's checkpoint; none before a dispatcher first joined it (as `csr projections status` lists it). */
async function fanOutLag(deps: Deps, fanOut: Follower): Promise<(readonly [string, { events: number; seconds: number }])[]> {
  const group = await deps.events.groupCheckpoint(fanOut.name);
  if (!group) return [];
  const lag = await lagAfter(deps.events, group.position, fanOut.filter, PROBE_LIMIT);
  return [[fanOut.name, { events: lag.events, seconds: lag.oldest ? Math.max(0, Date.now() - lag.oldest.getTime()) / 1000 : 0 }]];
}

/** The lag gauges of /metrics, one series per follower given (the registry's, registry.ts). */
export function projectionLagGauges(metrics: Metrics, deps: Deps, followers: readonly Follower[]): void {
  const projections = followers.filter((follower) => follower.kind !== 'fan-out');
  const fanOuts = followers.filter((follower) => follower.kind === 'fan-out');
  const lags = async () => [
    ...(await Promise.all(projections.map(async (projection) => [projection.name, await lagOf(deps, projection)] as const))),
    ...(await Promise.all(fanOuts.map((fanOut) => fanOutLag(deps, fanOut)))).flat(),
  ];
  // One read of the stores serves both gauges of a scrape.
  let pending: ReturnType<typeof lags> | null = null;
  const shared = () => {
    pending ??= lags().finally(() => setTimeout(() => (pending = null), 100));
    return pending;
  };
  metrics.gauge('projection_lag_events', `Events a projection has not applied yet (counted up to ${PROBE_LIMIT})`, ['projection'], async (set) => {
    for (const [projection, lag] of await shared()) set({ projection }, lag.events);
  });
  metrics.gauge('projection_lag_seconds', 'Age of the oldest event a projection has not applied (0 when none)', ['projection'], async (set) => {
    for (const [projection, lag] of await shared()) set({ projection }, lag.seconds);
  });
}
