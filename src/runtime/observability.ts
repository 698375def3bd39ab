import type { AddressInfo } from 'node:net';
import type { ServerType } from '@hono/node-server';
import { Hono } from 'hono';
import { projectionLagCheck, projectionLagGauges } from '../../projections/health.js';
import { followers } from '../../projections/registry.js';
import type { Config } from '../config.js';
import { createMetrics, type Metrics } from '../core/metrics.js';
import type { ReadinessCheck } from '../core/readiness.js';
import { metricsRoute } from '../http/metrics.js';
import type { AppEnv } from '../http/types.js';
import { webhookGauges } from '../webhooks/metrics.js';
import { listen } from './httpServer.js';
import { diskCheck, storesCheck, type ReadinessStores } from './readiness.js';
import type { WebhookStore } from '../webhooks/port.js';
import { walCheckpointCheck } from '../sqlite/checkpointer.js';

/**
 * What the api role gives operators: the metrics registry (appends timed, projection lag gauges),
 * the readiness checks of /health/ready, and, with METRICS_PORT, a /metrics listener on
 * 127.0.0.1 apart from the API.
 */
export interface ApiObservability {
  metrics: Metrics;
  readiness: ReadinessCheck[];
  /** Where METRICS_PORT serves /metrics (its real port when METRICS_PORT=0), or null. */
  metricsUrl: string | null;
  stop(): Promise<void>;
}

/** The stores the api role observes (the backends src/backends.ts opened, seen through their ports). */
export interface ObservedStores extends ReadinessStores {
  webhooks: WebhookStore;
}

export async function observeApi(config: Config, backends: ObservedStores, extraChecks: ReadinessCheck[] = []): Promise<ApiObservability> {
  const metrics = createMetrics();
  // From the registry of followers: lag gauges for the read models and the webhook fan-out (the
  // reactors' lag shows in `csr projections status`), readiness on the read models alone.
  const listed = followers().filter((follower) => follower.kind !== 'reactor');
  const projections = listed.filter((follower) => follower.kind === 'read-model');
  projectionLagGauges(metrics, backends, listed);
  webhookGauges(metrics, backends.webhooks);
  const embedded = config.eventStoreUrl === null;
  const readiness = [
    storesCheck(backends),
    projectionLagCheck(backends, projections, config.readyMaxLagMs),
    ...(embedded ? [diskCheck(config.dataDir), walCheckpointCheck()] : []),
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
    readiness,
    metricsUrl,
    async stop() {
      if (server) await new Promise((resolve) => server!.close(resolve));
    },
  };
}
