import type { Hono } from 'hono';
import type { Metrics } from '../core/metrics.js';
import type { AppEnv } from './types.js';

/** GET /metrics in the Prometheus text format. */
export function metricsRoute(app: Hono<AppEnv>, metrics: Metrics): void {
  app.get('/metrics', async (c) => {
    const body = await metrics.registry.metrics();
    return c.body(body, 200, { 'Content-Type': metrics.registry.contentType });
  });
}
