import type { Metrics } from '../src/core/metrics.js';
import type { ReadinessCheck } from '../src/core/readiness.js';
import type { EventStore } from '../src/eventstore/port.js';
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

/** Ready while every projection's oldest unapplied event is younger than `maxLagMs`. */
export function projectionLagCheck(deps: Deps, projections: readonly Pick<Follower, 'name' | 'filter'>[], maxLagMs: number): ReadinessCheck {
  return {
    name: 'projections',
    async check() {
      const behind: string[] = [];
      for (const projection of projections) {
        const lag = await lagOf(deps, projection);
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
