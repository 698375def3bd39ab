import type { AddressInfo } from 'node:net';
import type { ServerType } from '@hono/node-server';
import { Hono } from 'hono';
import { projectionLagCheck, projectionLagGauges } from '../../projections/health.js';
import { registeredProjections } from '../../projections/registry.js';
import type { Config } from '../config.js';
import { createMetrics, type Metrics } from '../core/metrics.js';
import type { ReadinessCheck } from '../core/readiness.js';
import type { EventStore } from '../eventstore/port.js';
import type { Catalogues } from '../setup/catalogues.js';
import { instrumentAppends } from '../eventstore/instrumented.js';
import { metricsRoute } from '../http/metrics.js';
import type { AppEnv } from '../http/types.js';
import { webhookGauges } from '../webhooks/metrics.js';
import { listen } from './httpServer.js';
import { diskCheck, storesCheck, type ReadinessStores } from './readiness.js';
import type { WebhookStore } from '../webhooks/port.js';

/**
 * What the api role gives operators: the metrics registry (appends timed, projection lag gauges),
 * the readiness checks of /health/ready, and, with METRICS_PORT, a /metrics listener on
 * 127.0.0.1 apart from the API.
 */
export interface ApiObservability {
  metrics: Metrics;
  /** The event store with its appends measured: what the commands get. */
  events: EventStore;
  readiness: ReadinessCheck[];
  /** Where METRICS_PORT serves /metrics (its real port when METRICS_PORT=0), or null. */
  metricsUrl: string | null;
  stop(): Promise<void>;
}

/** The stores the api role observes (the backends src/backends.ts opened, seen through their ports). */
export interface ObservedStores extends ReadinessStores {
  webhooks: WebhookStore;
}

export async function observeApi(config: Config, backends: ObservedStores, catalogues: Catalogues, extraChecks: ReadinessCheck[] = []): Promise<ApiObservability> {
  const metrics = createMetrics();
  const projections = registeredProjections({ catalogues });
  projectionLagGauges(metrics, backends, projections);
  webhookGauges(metrics, backends.webhooks);
  const embedded = config.eventStoreUrl === null;
  const readiness = [
    storesCheck(backends),
    projectionLagCheck(backends, projections, config.readyMaxLagMs),
    ...(embedded ? [diskCheck(config.dataDir)] : []),
    ...extraChecks,
  ];
  let server: ServerType | null = null;
  let metricsUrl: string | null = null;
  if (config.metricsPort !== null) {
    const app = new Hono<AppEnv>();
    metricsRoute(app, metrics);
    server = await listen(app.fetch, { port: config.metricsPort, host: '127.0.0.1' });
    metricsUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`;
  }
  return {
    metrics,
    events: instrumentAppends(backends.events, metrics),
    readiness,
    metricsUrl,
    async stop() {
      if (server) await new Promise((resolve) => server!.close(resolve));
    },
  };
}
