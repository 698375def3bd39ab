import type { Metrics } from '../src/core/metrics.js';
import type { ReadinessCheck } from '../src/core/readiness.js';
import type { EventStore } from '../src/eventstore/port.js';
import type { ReadStore } from '../src/readstore/port.js';
import type { Projection } from './projection.js';
import { WEBHOOKS_FILTER, WEBHOOKS_GROUP } from '../src/webhooks/port.js';
import { lagAfter } from './status.js';

/** Projection lag for /health/ready and /metrics, read from the stores (any process, any role). */

/** Lag is counted up to here when scraped or probed: enough to alert on, cheap to read. */
const PROBE_LIMIT = 10_000;

type Deps = { events: EventStore; readStore: ReadStore };

async function lagOf(deps: Deps, projection: Projection): Promise<{ events: number; seconds: number }> {
  const checkpoint = await deps.readStore.checkpoint(projection.name);
  const lag = await lagAfter(deps.events, checkpoint, projection.filter, PROBE_LIMIT);
  return { events: lag.events, seconds: lag.oldest ? Math.max(0, Date.now() - lag.oldest.getTime()) / 1000 : 0 };
}

/** A runner's status older than this says nothing about now (its process is gone). */
const FRESH_STATUS_MS = 60_000;

/**
 * Ready while every projection's oldest unapplied event is younger than `maxLagMs`, and no runner
 * says that its last batch failed: a projector that cannot write (a full disk) is said at once,
 * with its error, not only once its lag has grown past the bound.
 */
export function projectionLagCheck(deps: Deps, projections: readonly Projection[], maxLagMs: number): ReadinessCheck {
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
        const lag = await lagOf(deps, projection);
        if (lag.seconds * 1000 > maxLagMs) behind.push(`${projection.name} is ${lag.events} events (${Math.round(lag.seconds)} s) behind the log`);
      }
      return behind.length === 0 ? null : behind.join('; ');
    },
  };
}

/** The webhook fan-out's consumer group, as `csr projections status` lists it (none before a dispatcher first joined it). */
async function fanOutLag(deps: Deps): Promise<(readonly [string, { events: number; seconds: number }])[]> {
  const group = await deps.events.groupCheckpoint(WEBHOOKS_GROUP);
  if (!group) return [];
  const lag = await lagAfter(deps.events, group.position, WEBHOOKS_FILTER, PROBE_LIMIT);
  return [[WEBHOOKS_GROUP, { events: lag.events, seconds: lag.oldest ? Math.max(0, Date.now() - lag.oldest.getTime()) / 1000 : 0 }]];
}

export function projectionLagGauges(metrics: Metrics, deps: Deps, projections: readonly Projection[]): void {
  const lags = async () => [
    ...(await Promise.all(projections.map(async (projection) => [projection.name, await lagOf(deps, projection)] as const))),
    ...(await fanOutLag(deps)),
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
